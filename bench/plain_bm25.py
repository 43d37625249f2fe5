"""A plain BM25 baseline for the benchmarks: an in-memory tantivy index of words given by the
caller, with none of freshmark's code-aware tokens, term weights, kinds, files or vectors."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import tantivy

TOKENIZER = "plain_words"


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("words", stored=False, tokenizer_name=TOKENIZER, index_option="freq")
    return builder.build()


class PlainBm25:
    """Okapi BM25 (tantivy's: k1 = 1.2, b = 0.75) over whitespace-joined words; changes are
    committed before the next search."""

    def __init__(self) -> None:
        self.schema = _schema()
        self.index = tantivy.Index(self.schema)
        self.index.register_tokenizer(
            TOKENIZER, tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
        self.writer = self.index.writer(heap_size=64_000_000, num_threads=1)
        self.pending = False

    def add(self, doc_id: str, words: Iterable[str]) -> None:
        """Index ``doc_id`` with ``words`` (replacing what it held)."""
        self.writer.delete_documents_by_term("id", doc_id)
        self.writer.add_document(tantivy.Document(id=doc_id, words=" ".join(words)))
        self.pending = True

    def remove(self, doc_id: str) -> None:
        self.writer.delete_documents_by_term("id", doc_id)
        self.pending = True

    def search(self, terms: Sequence[str], n: int) -> list[tuple[str, float]]:
        """The ``n`` best (id, score), best first."""
        if self.pending:
            self.writer.commit()
            self.index.reload()
            self.pending = False
        if not terms or n <= 0:
            return []
        query = tantivy.Query.boolean_query([
            (tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "words", term))
            for term in dict.fromkeys(terms)])
        searcher = self.index.searcher()
        return [(str(searcher.doc(address).get_first("id")), float(score))
                for score, address in searcher.search(query, n).hits]
