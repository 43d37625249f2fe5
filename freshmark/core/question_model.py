"""The score of a candidate for a question: a logistic model over the rerank's features (pure).

A question ("how does a session follow redirects", "parse a date string in python") asks for
one definition. The hand-set formula of ``fusion.combined_score`` was chosen on the questions it
is measured on, and on questions about repositories it had not seen it put the answer first for
0.46 of them against 0.60 on its own set (bench/RESULTS.md, "Held-out everyday questions").
This model is a class-balanced logistic regression of "this chunk answers" on the same
features, fitted on saved candidate pools (``bench/tune_questions.py --fit``): 262 everyday
questions on twelve repositories (the 122 of ``bench/questions/`` and the first 140 of
``bench/questions/heldout/``) and CoSQA's 313 web questions. Its features:

- the rerank's evidence: ``rrf_norm``, ``bm25_norm``, the vector similarity faded for queries
  written as code, ``symbol_hit``, ``path_hit``, ``length_fit``, ``substance``,
  ``qualified_hit`` and ``kind_prior`` (added, not multiplied: fitted, a test chunk loses
  twice what the best BM25 match gains);
- what kind of chunk it is: a class-like outline (``outline``) or a module block (``block``),
  which summarise other chunks and are rarely the answer;
- ``file_shared`` (the chunk's file has other candidates in the pool) and its products with
  the first four: in a repository, a question's words recur in the file that holds the answer
  and lexical evidence separates its definitions; in a snippet corpus (CoSQA: one function per
  file) every candidate is alone and the vector similarity decides. One set of weights for
  both, without the products, cost CoSQA 0.03 MRR.

First fitted on the 122 questions and CoSQA, it put the answer first for 0.52 of 60 questions
on three repositories written after it shipped (the formula 0.45). Refitted with the 140
held-out questions added, it was scored on 80 more, on four repositories nothing had been
fitted or chosen on (``heldout/``: marshmallow, echo, commander.js, hono): Acc@1 0.45 → 0.49,
Acc@5 0.80 → 0.81, MRR 0.60 → 0.63, no repository lower; CoSQA MRR 0.871 → 0.868 (fitted with
it).

It was fitted on vectors of each chunk's source alone. Chunks are now embedded with a line
naming them first (``embed_text.py``); on the blind 80 these weights then put the answer first
for 0.55, and a refit on pools with the line for 0.50 (Acc@5 0.86 / 0.88), so they stay.

The score is the model's probability, in (0, 1): positive, as the structure rules
(``structure.members_first`` compares a member's score with its container's) expect.

Where it applies (``applies``): a description of what the code does, of ``MIN_WORDS`` words or
more, most of them not written as code, naming no ``Class.method``, searched over vectors of
``FITTED_EMBEDDER``. Every query it was fitted on is such a question (4 to 21 words, none
mostly code, none with a qualified name). The rest keeps the formula: a look-up by name
(``getUserById``, ``Context.invoke``, ``refund``), where the name decides and the model,
which saw none, gives the symbol almost no weight; an issue report (its whole-file evidence,
traceback frames and pools differ); another embedder, whose similarities the vector weights
were not fitted to; file answers, which read whole-file evidence the model does not.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from freshmark.core.chunking.model import CONTAINER_KINDS

# The embedder whose similarities the model was fitted on (``Embedder.id``).
FITTED_EMBEDDER = "all-MiniLM-L6-v2/onnx-int8"
# A query shorter than this is a look-up (a name, a keyword or two), not a description.
MIN_WORDS = 4
# A query with at least this share of its words written as code names what it wants.
MAX_CODE_SHARE = 0.5

# Weights per feature in its own units (standardised weights over the fitting rows' spread),
# and the intercept: ``bench/tune_questions.py --fit`` prints them.
QUESTION_WEIGHTS: dict[str, float] = {
    "rrf_norm": -2.150,
    "bm25_norm": 3.470,
    "vector_faded": 13.943,
    "symbol_hit": -0.008,
    "path_hit": 4.633,
    "length_fit": 0.256,
    "substance": 1.494,
    "kind_prior": 12.540,
    "qualified_hit": 0.000,
    "outline": -6.309,
    "block": -5.535,
    "file_shared": 4.834,
    "file_shared_rrf": 4.174,
    "file_shared_bm25": 0.326,
    "file_shared_vector": -10.096,
    "file_shared_symbol": -0.019,
}
QUESTION_INTERCEPT = -23.413


def pool_marks(chunk_kinds: Sequence[str], paths: Sequence[str]) -> list[dict[str, float]]:
    """Each candidate's ``outline`` (a class-like outline), ``block`` (a module block) and
    ``file_shared`` (its file has other candidates in the pool), which the model reads;
    ``chunk_kinds`` and ``paths`` side by side, one entry per candidate."""
    per_file = Counter(paths)
    return [{"outline": 1.0 if kind in CONTAINER_KINDS else 0.0,
             "block": 1.0 if kind == "block" else 0.0,
             "file_shared": 1.0 if per_file[path] > 1 else 0.0}
            for kind, path in zip(chunk_kinds, paths, strict=True)]


def question_features(features: Mapping[str, float]) -> dict[str, float]:
    """The model's inputs from a candidate's rerank features (``fusion.rerank`` sets them all;
    ``outline``, ``block`` and ``file_shared`` are 0.0 where a saved pool lacks them)."""
    shared = features.get("file_shared", 0.0)
    vector_faded = features["vector_norm"] * (1.0 - features["code_share"])
    return {
        "rrf_norm": features["rrf_norm"],
        "bm25_norm": features["bm25_norm"],
        "vector_faded": vector_faded,
        "symbol_hit": features["symbol_hit"],
        "path_hit": features["path_hit"],
        "length_fit": features["length_fit"],
        "substance": features.get("substance", 0.0),
        "kind_prior": features["kind_prior"],
        "qualified_hit": features.get("qualified_hit", 0.0),
        "outline": features.get("outline", 0.0),
        "block": features.get("block", 0.0),
        "file_shared": shared,
        "file_shared_rrf": shared * features["rrf_norm"],
        "file_shared_bm25": shared * features["bm25_norm"],
        "file_shared_vector": shared * vector_faded,
        "file_shared_symbol": shared * features["symbol_hit"],
    }


def question_score(features: Mapping[str, float],
                   weights: Mapping[str, float] = QUESTION_WEIGHTS,
                   intercept: float = QUESTION_INTERCEPT) -> float:
    """The model's probability that this candidate answers the question."""
    inputs = question_features(features)
    logit = intercept + sum(weight * inputs[name] for name, weight in weights.items())
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


def applies(words: int, code_share: float, names_a_member: bool) -> bool:
    """Whether a short query (not an issue report) of ``words`` words, ``code_share`` of them
    written as code, is a description the model ranks; ``names_a_member``: it writes a
    ``Class.method`` that a candidate is."""
    return words >= MIN_WORDS and code_share < MAX_CODE_SHARE and not names_a_member
