"""The request and answer models of freshmark's network API, shared by the HTTP routes
(``faces.http.search_routes``, where they make ``/openapi.json``) and the MCP tools
(``faces.mcp.server``, where they make each tool's input descriptions and output schema).

Plain pydantic, no web framework: the MCP server imports them without loading FastAPI. Input
bounds come from ``faces.api.schema`` and describe the server's own checks; a request body
becomes the one validated request the services take (``core.request``) by ``to_request``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
)

from freshmark.core import request as core_request
from freshmark.faces.api.schema import (
    MAX_K,
    MAX_QUERY_CHARS,
    WORKTREE_WITHOUT_BRANCH,
    AnswerText,
    BranchGiven,
    BudgetTokens,
    FileKind,
    LevelName,
    QueryText,
    RepoName,
    VerifyContent,
    not_a_boolean,
)

VerdictName = Literal["current", "older_identical", "changed", "historical", "excluded",
                      "unverifiable"]
REPO_FIELD = Field(description="The repository's id (configured), or the name, key or path it "
                               "was indexed under; never any other path on the server. At "
                               "most 256 characters, no control characters; unknown: 404.",
                   examples=["shop"])
QUERY_DESCRIPTION = (f"Words, a question, symbol names or a whole issue report: not blank, no "
                     f"NUL. The server's limit is 100,000 UTF-8 bytes; the schema says "
                     f"{MAX_QUERY_CHARS:,} characters, which can never exceed it.")
BRANCH_FIELD = Field(None, description="Branch; default: the one checked out.")
WORKTREE_FIELD = Field(False, description="Verify against the working tree (uncommitted edits "
                                          "count, tracked files only) instead of the branch "
                                          "head; for registered working copies only, and "
                                          "with no branch named.")


class ErrorDetail(BaseModel):
    error: str = Field(description="Error type, e.g. BadInput, NotIndexed, RepositoryGone.")
    message: str = Field(description="What is wrong and what to do, in one line.")


class ErrorBody(BaseModel):
    detail: ErrorDetail


class TargetInfo(BaseModel):
    branch: str
    head: str = Field(description="Commit the results were verified against.")
    worktree: bool


class IndexInfo(BaseModel):
    """The index an answer came from."""

    collection: str
    repo: str
    branch: str
    commit: str | None = Field(description="Commit every layer is indexed at (None while the "
                                           "layers differ; see ``layers``).")
    indexed_at: str | None = Field(description="Build time of that commit (UTC).")
    layers: dict[str, dict[str, str]] = Field(
        description="Per layer: the commit it was last built at and when.")
    embedder: str
    generation: int


class DriftNoteModel(BaseModel):
    symbol: str = Field(description="The definition the result uses.")
    path: str
    change: Literal["changed", "vanished"]
    commit: str | None = Field(description="The newest commit that touched its file, if found.")


class VerifiedResultModel(BaseModel):
    """One result: the SPEC §1 stamp fields under their names, plus the verification.

    The mandatory stamp fields and the verification are always there. The compact form (the
    default) leaves out the other fields when they are empty and the ranking diagnostics
    (``explain``); ``full`` keeps every field, nulls included (``faces.api.shape``).
    """

    repo: str
    branch: str
    commit: str
    path: str
    symbol: str
    start_line: int
    end_line: int
    indexed_at: str
    blob_sha: str
    content_sha256: str
    kind: str = ""
    language: str = ""
    signature: str = ""
    file_kind: str = ""
    layer: str = ""
    status: str = ""
    tombstoned_in: str | None = None
    tombstoned_at: str | None = None
    successor: str | None = None
    verdict: VerdictName
    seed_word: str = Field("", description="The seed's word for the verdict (可用, 较旧, "
                                           "失效...).")
    reason: str
    action: str = Field("", description="What the caller does with this verdict.")
    citation: str = Field(description="The three-line citation header (source, version, "
                                      "check or use), to paste above the text.")
    current_start_line: int | None = Field(None, description="For changed: the symbol's lines "
                                                             "today.")
    current_end_line: int | None = None
    moved_to: str | None = Field(None, description="The file's path today when it moved "
                                                   "since indexing (older_identical or "
                                                   "changed); the citation names it.")
    current_signature: str | None = Field(None, description="For changed: the signature of "
                                                            "the definition the text is read "
                                                            "from, as it is today.")
    renamed_to: str | None = Field(None, description="For changed: the symbol's full name "
                                                     "today when its definition was renamed "
                                                     "in place; the citation names it.")
    text: str = Field(description="The code: today's lines for changed, else the chunk.")
    head_lines: int | None = Field(None, description="For a later part of a long definition: "
                                                     "how many of the text's first lines are "
                                                     "its head (signature), carried from above "
                                                     "start_line; the rest is start_line on.")
    declared_at: int | None = Field(None, description="For a look-up answered by a module "
                                                      "block, an interface or a class outline: "
                                                      "the file line declaring the name.")
    declared_row: int | None = Field(None, description="With declared_at, when the text's rows "
                                                       "are not the file's lines (an outline): "
                                                       "the text's row (0-based) holding it.")
    message_at: int | None = Field(None, description="For a pasted error message: the file "
                                                     "line holding its fixed words in a "
                                                     "result that holds them.")
    parts: list[tuple[int, int]] = Field(default_factory=list, description="For a part of a "
                                         "definition chunked in parts: every part's first and "
                                         "last line, in order, this one's among them.")
    rank: int
    score: float | None = None
    explain: dict[str, Any] = Field(default_factory=dict,
                                    description="Ranking diagnostics (full form only).")
    drift: list[DriftNoteModel] = Field(
        default_factory=list,
        description="For older_identical: definitions it uses (names it references, in modules "
                    "it imports) that changed or vanished since its stamp; the verdict keeps "
                    "its meaning.")

    # No return annotation: pydantic would publish it as the result's serialization schema.
    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler):
        """Serialized with the fields the answer holds, so a compact answer stays compact
        (and a full one keeps its nulls) through the HTTP and MCP layers."""
        return {name: value for name, value in handler(self).items()
                if name in self.model_fields_set}


KIND_FIELD = Field(None, description="File kinds to search: source, test, doc, config, other, "
                                     "changelog, translation (generated, backup, fixture, "
                                     "vendored with include_excluded). Default: all but "
                                     "changelogs and translations; source is ranked first. "
                                     "Names in any case.",
                   max_length=16)

FULL_FIELD = Field(False, description="The full answer: every field of every result, nulls and "
                                      "ranking diagnostics (explain) included. Default: the "
                                      "compact form, which keeps the mandatory stamp fields "
                                      "and the verification and leaves out empty fields.")


class SearchRequest(BaseModel):
    model_config = ConfigDict(json_schema_extra=WORKTREE_WITHOUT_BRANCH, extra="forbid")

    query: QueryText = Field(description=QUERY_DESCRIPTION,
                             examples=["cancel order idempotency"])
    repo: RepoName = REPO_FIELD
    branch: BranchGiven | None = BRANCH_FIELD
    k: Annotated[int, BeforeValidator(not_a_boolean)] = Field(
        5, ge=1, le=MAX_K, description=f"How many results (1 to {MAX_K}).")
    worktree: bool = WORKTREE_FIELD
    history: bool = Field(False, description="Also return tombstoned (deleted) code, "
                                             "labelled historical.")
    include_excluded: bool = Field(False, description="Also return generated, backup, fixture "
                                                      "and vendored code, labelled excluded.")
    kind: list[FileKind] | None = KIND_FIELD
    full: bool = FULL_FIELD

    def to_request(self) -> core_request.SearchRequest:
        """The search this body asks for, validated (``BadInput`` for a bad one)."""
        return core_request.SearchRequest.build(
            self.query, k=self.k, kinds=self.kind, include_history=self.history,
            include_excluded=self.include_excluded, branch=self.branch, worktree=self.worktree)


class FileResultModel(BaseModel):
    """One file of a file answer; its verdict and citation are its best chunk's."""

    rank: int
    path: str
    file_kind: str
    score: float
    verdict: VerdictName
    citation: str
    chunks: list[VerifiedResultModel]


def _unindexed() -> Any:
    """A fresh field each time: pydantic fills a FieldInfo in for the model that holds it."""
    return Field(None, description=(
        "The index behind the branch head: commits since the indexed one, new_files (not "
        "searched until indexed) and the first new_paths, changed_files and deleted_files "
        "(verified as they are now), moved_files (a deleted file's very content at a new "
        "path: found and verified there); null when the index is at the head."))


class FilesResponseModel(BaseModel):
    query: str
    repo: str
    target: TargetInfo
    index: IndexInfo
    files: list[FileResultModel]
    unindexed: dict[str, Any] | None = _unindexed()
    timings: dict[str, float] = Field(description="Seconds per stage.")


class SearchResponseModel(BaseModel):
    query: str
    repo: str
    target: TargetInfo
    index: IndexInfo
    results: list[VerifiedResultModel]
    verdicts: dict[str, int]
    hidden_historical: int = Field(0, description="Results passed over as historical (their "
                                                  "code is gone since indexing) while the k "
                                                  "were filled; history: true serves them.")
    deleted_named: int = Field(0, description="A look-up by name: definitions of that name "
                                              "deleted (tombstoned) and so passed over; "
                                              "history: true serves them. 0 otherwise.")
    uncommitted: dict[str, Any] | None = Field(None, description=(
        "worktree: true only: new_files (not searched until committed and indexed), "
        "changed_files, deleted_files and moved_files (verified as they are now) and the "
        "first new_paths."))
    unindexed: dict[str, Any] | None = _unindexed()
    edited: list[str] | None = Field(None, description=(
        "Served files edited in the work tree since the branch head and not committed: their "
        "results are verified against the head; worktree: true verifies against the disk."))
    gone: list[str] | None = Field(None, description=(
        "Served files deleted or moved away in the work tree since the branch head and not "
        "committed: their results are verified against the head."))
    timings: dict[str, float] = Field(description="Seconds per stage.")


class VerifyRequest(BaseModel):
    model_config = ConfigDict(json_schema_extra=WORKTREE_WITHOUT_BRANCH, extra="forbid")

    content: VerifyContent = Field(
        description="A snippet list (path<TAB>sha256-prefix per line) or search results as "
                    "JSON: at most 2,000 lines, no NUL, the first line not a # comment. JSON "
                    "with no result in it (an empty list) has nothing to verify (400).",
        examples=["src/orders/services/order_service.py\t4a91c0f7d2e8"])
    repo: RepoName = REPO_FIELD
    branch: BranchGiven | None = BRANCH_FIELD
    worktree: bool = WORKTREE_FIELD


class VerifyLineModel(BaseModel):
    line: int = Field(description="1-based input line the entry starts on.")
    path: str
    verdict: VerdictName | Literal["invalid"] = Field(
        description="'invalid' when the line could not be checked (malformed, unsafe path).")
    reason: str
    source_format: Literal["tsv", "json"]
    seed_word: str | None
    symbol: str | None
    citation: str | None
    current_start_line: int | None
    current_end_line: int | None
    moved_to: str | None = Field(None, description="Where the file is today, if it moved.")


class VerifyResponseModel(BaseModel):
    repo: str
    target: TargetInfo
    lines: list[VerifyLineModel]
    verdicts: dict[str, int]
    safe: bool = Field(description="True only if every line may be used as is.")


def upper_level(value: object) -> object:
    """``l2`` is ``L2``: levels are accepted in any case, as on the command line."""
    return value.strip().upper() if isinstance(value, str) else value


ContextLevel = Annotated[Literal["L1", "L2", "L3"], BeforeValidator(upper_level),
                         WithJsonSchema(LevelName.__metadata__[0].json_schema)]


class ContextRequest(BaseModel):
    model_config = ConfigDict(json_schema_extra=WORKTREE_WITHOUT_BRANCH, extra="forbid")

    query: QueryText = Field(description=QUERY_DESCRIPTION,
                             examples=["how is an order cancelled twice"])
    repo: RepoName = REPO_FIELD
    branch: BranchGiven | None = BRANCH_FIELD
    level: ContextLevel = Field("L1", description="L1 symbol, L2 module, L3 cross-module "
                                                  "(any case: l2 is L2).")
    budget: BudgetTokens | None = Field(
        None, description="Token budget, 300 to 120,000 (default by level: 4000, 20000, "
                          "60000). 1 token ≈ 3 characters.")
    worktree: bool = WORKTREE_FIELD

    def to_request(self) -> core_request.ContextRequest:
        """The context slice this body asks for, validated (``BadInput`` for a bad one)."""
        return core_request.ContextRequest.build(
            self.query, level=self.level, budget_tokens=self.budget, branch=self.branch,
            worktree=self.worktree)


class ContextSectionModel(BaseModel):
    role: str = Field(description="evidence, imports, type, module, dependency, caller, "
                                  "related, call_chain, candidate or reference.")
    path: str
    symbol: str
    start_line: int
    end_line: int
    confidence: Literal["high", "medium", "low"]
    verdict: str | None
    anchor: str = Field(description="[file:Lx-Ly | symbol | confidence]")
    note: str
    citation: str | None
    text: str
    shown_start: int | None = Field(None, description="First line the text shows (a "
                                                      "signature: the lines it is written on; "
                                                      "None: an outline, trimmed imports, a "
                                                      "pointer or a call chain).")
    shown_end: int | None = Field(None, description="Last line the text shows (with "
                                                    "breathing room past end_line).")


class ContextResponseModel(BaseModel):
    query: str
    level: str
    budget_tokens: int
    used_tokens: int
    target: TargetInfo
    index: IndexInfo
    sections: list[ContextSectionModel]
    missing: list[str] = Field(description="[MISSING] lines: evidence looked for and not "
                                           "there.")
    left_out: list[str] = Field(default_factory=list,
                                description="[LEFT OUT] lines: material that exists but did "
                                            "not fit the budget (or only in a smaller form): "
                                            "where it is, its symbol, confidence and role "
                                            "(a caller's: graph-confirmed or name match "
                                            "only), and why it is cut.")
    text: str = Field(description="The slice, ready to paste into a prompt.")


class GoldLocationModel(BaseModel):
    path: str = Field(max_length=4096)
    start_line: int = Field(0, ge=0)
    end_line: int = Field(0, ge=0)
    symbol: str = Field("", max_length=1024)


class ServedSectionModel(BaseModel):
    """What the checker reads of a context section (the rest of it may be there too)."""

    model_config = ConfigDict(extra="allow")

    path: str = Field(max_length=4096)
    start_line: int
    end_line: int
    symbol: str = ""
    role: str = ""
    shown_start: int | None = None
    shown_end: int | None = None


class ServedIndexModel(BaseModel):
    model_config = ConfigDict(extra="allow")

    repo: RepoName = Field(description="The repository the slice was built from.")


class ServedTargetModel(BaseModel):
    model_config = ConfigDict(extra="allow")

    branch: str | None = None


class ServedContextModel(BaseModel):
    """A context slice as /v1/context returned it; the checker reads these fields."""

    model_config = ConfigDict(extra="allow")

    level: ContextLevel = "L1"
    target: ServedTargetModel = Field(default_factory=ServedTargetModel)
    index: ServedIndexModel
    sections: list[ServedSectionModel] = Field(max_length=5000)


class CheckAnswerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: AnswerText = Field(description=(
        "The answer as the agent wrote it: references [file:Lx-Ly | symbol | "
        "high/medium/low] and [MISSING] lines."))
    context: ServedContextModel = Field(description="The context slice the answer was "
                                                    "written from, as /v1/context returned it.")
    gold: list[GoldLocationModel] | None = Field(None, max_length=50, description=(
        "Where the answer really is, for location accuracy."))
    repo: RepoName | None = Field(None, description="The repository; default: the one the "
                                                    "context names.")


class ReferenceCheckModel(BaseModel):
    text: str
    path: str | None
    start_line: int
    end_line: int
    symbol: str
    confidence: str
    compliant: bool = Field(description="Lines with their file, a symbol and a confidence.")
    in_slice: bool = Field(description="The lines lie inside what the slice served.")
    at_head: bool = Field(description="The file has those lines at the head.")
    symbol_in_lines: bool | None
    hallucinated: bool = Field(description="Not in the slice, or not at the head.")
    on_gold: bool | None
    problems: list[str]


class MissingCheckModel(BaseModel):
    text: str
    paths: list[str]
    symbols: list[str]
    existing: list[str] = Field(description="The named files and symbols that exist at the "
                                            "head.")
    on_gold: bool | None
    precise: bool


class CheckAnswerResponseModel(BaseModel):
    passed: bool = Field(description="No hallucinated reference and every reference complete.")
    refs: int
    hallucinated_refs: int
    hallucinated_rate: float | None
    compliance: float
    location_accuracy: float | None
    missing_lines: int
    missing_precision: float | None
    references: list[ReferenceCheckModel]
    missing: list[MissingCheckModel]


class BranchStatusModel(BaseModel):
    """One branch of ``GET /v1/repos/{repo}/status`` (``freshmark status --json`` has the same
    rows). A branch deleted from its repository has only the first fields and ``gone``."""

    model_config = ConfigDict(extra="allow")
    repo: str
    branch: str
    collection: str
    gone: bool = Field(description="The branch was deleted from its repository.")
    retired: bool | None = Field(None, description="For a gone branch: its index was dropped.")
    commit: str | None = Field(None, description="Commit every layer is indexed at.")
    indexed_at: str | None = None
    layers: dict[str, dict[str, Any]] | None = Field(
        None, description="Per layer: the commit and time it was last stamped at.")
    embedder: str | None = None
    live_chunks: int | None = None
    tombstoned_chunks: int | None = None
    behind: dict[str, Any] | None = Field(
        None, description="The branch head as the server reads it, commits and files "
                          "between the indexed commit and it, or why it could not be read.")
    verdicts: dict[str, int] | None = Field(None, description="Verdicts served by searches.")


class StatusResponseModel(BaseModel):
    repo: str
    branches: list[BranchStatusModel]
