"""The tantivy indexes' schema, their documents and how an index is opened.

Chunk documents: ``id`` (raw), ``tokens`` (``tokenize.iter_tokens`` of path, symbol and text
joined by spaces and split again only on spaces, so tantivy keeps freshmark's code-aware tokens
exactly; stored, to rebuild file documents), ``path`` (raw), ``kind`` (``KIND_CODES`` of
``classify.search_kind``), ``tombstoned`` (0/1), ``file`` (a hash of the path), ``content``
(stored: ``LexicalDocument.content_key``, which a catch-up compares to leave a restamped chunk
as it is). A file document holds its live chunks' tokens. Keeping them in step with the store:
``tantivy_store``.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import tantivy

from freshmark.core.classify import search_kind
from freshmark.core.kinds import KIND_CODES
from freshmark.core.lexical_document import LexicalDocument
from freshmark.core.stamp import TOMBSTONED

TOKENIZER = "freshmark_tokens"
OPEN_ATTEMPTS = 3
OPEN_RETRY_SECONDS = 0.05


@cache
def schema(files: bool = False) -> tantivy.Schema:
    """The fields of chunk documents, or (``files``) of whole-file documents, whose tokens are
    not stored."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    # A chunk's tokens are stored: its file's document is rebuilt from them, not re-fetched.
    builder.add_text_field("tokens", stored=not files, tokenizer_name=TOKENIZER,
                           index_option="freq")
    builder.add_text_field("path", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_unsigned_field("kind", indexed=True, fast=True)
    builder.add_unsigned_field("tombstoned", indexed=True, fast=True)
    # The path as a number a search can read per hit without loading the stored document.
    builder.add_unsigned_field("file", fast=True)
    if not files:
        builder.add_unsigned_field("content", stored=True)
    return builder.build()


def file_key(path: str) -> int:
    return int.from_bytes(hashlib.blake2b(path.encode(), digest_size=8).digest(), "big")


def chunk_document(chunk: LexicalDocument) -> tantivy.Document:
    document = tantivy.Document()
    document.add_text("id", chunk.id)
    document.add_text("tokens", chunk.tokens)
    document.add_text("path", chunk.path)
    document.add_unsigned("kind", KIND_CODES.get(search_kind(chunk.path, chunk.file_kind), 0))
    document.add_unsigned("tombstoned", int(chunk.status == TOMBSTONED))
    document.add_unsigned("file", file_key(chunk.path))
    document.add_unsigned("content", chunk.content_key)
    return document


def file_document(path: str, tokens: Sequence[str], kind: int) -> tantivy.Document:
    document = tantivy.Document()
    document.add_text("id", path)
    document.add_text("tokens", " ".join(tokens))
    document.add_text("path", path)
    document.add_unsigned("kind", kind)
    document.add_unsigned("tombstoned", 0)
    document.add_unsigned("file", file_key(path))
    return document


def open_index(directory: Path | None, files: bool) -> tuple[tantivy.Index, bool]:
    """The index at ``directory`` (created when missing; None: in memory), with freshmark's
    whitespace analyzer registered, and whether it was recreated: an index of another schema
    (an older freshmark's) is a cache, emptied with its state. Any other failure to open (two
    processes creating it at once) is retried, never answered by deleting the index."""
    fields = schema(files)
    recreated = False
    if directory is None:
        index = tantivy.Index(fields)
    else:
        index, recreated = _open_on_disk(fields, directory)
    index.register_tokenizer(TOKENIZER,
                             tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
    return index, recreated


def _open_on_disk(fields: tantivy.Schema, directory: Path) -> tuple[tantivy.Index, bool]:
    failure: Exception | None = None
    for _ in range(OPEN_ATTEMPTS):
        directory.mkdir(parents=True, exist_ok=True)
        try:
            return tantivy.Index(fields, path=str(directory), reuse=True), False
        except (ValueError, OSError) as error:
            if "schema does not match" not in str(error):
                failure = error
                time.sleep(OPEN_RETRY_SECONDS)
                continue
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True, exist_ok=True)
        return tantivy.Index(fields, path=str(directory), reuse=False), True
    assert failure is not None
    raise failure
