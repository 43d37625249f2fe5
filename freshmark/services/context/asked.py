"""What a context query asks for by name (``OrderService.cancel_order``, ``run_patch_tests``),
and which of the search's results answer it: those lead the slice's evidence."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from freshmark.core.declarations import declares_member, defined_in_text
from freshmark.core.errors import UnsafePath
from freshmark.core.kinds import is_secondary
from freshmark.core.php_calls import php_namespace_at
from freshmark.core.query import plan_query
from freshmark.core.stamp import own_name
from freshmark.core.structure import (
    looked_up,
    named_by,
    without_declaration_word,
)
from freshmark.core.tree import module_name
from freshmark.services.retrieval.results import VerifiedResult

# A PHP name written with its namespace (``GuzzleHttp\\describe_type``), not a class's member
# (``GuzzleHttp\\Client::send``): the namespace and the name.
_PHP_NAMESPACED = re.compile(r"(?<![\w\\])\\?((?:\w+\\)+)(\w+)(?![\w\\]|\s*::)")


@dataclass(frozen=True)
class AskedNames:
    """What a query that is only names asks for: the names (``run_patch_tests``,
    ``OrderService.cancel_order`` -> ``cancel_order``...; [] for a question), its dotted
    names as slash paths (``OrderService/cancel_order``) and the PHP names it writes with their
    namespace, (namespace, name), whose files ``file_today`` reads (by path, today)."""

    names: list[str]
    dotted: list[str]
    namespaced: list[tuple[str, str]] = field(default_factory=list)
    file_today: Callable[[str], str | None] | None = None

    @classmethod
    def of(cls, query: str, file_today: Callable[[str], str | None] | None = None
           ) -> AskedNames:
        plan = plan_query(query)
        names = looked_up(without_declaration_word(plan.text), plan.identifiers,
                          plan.path_hints)
        namespaced = [(namespace.strip("\\"), name)
                      for namespace, name in _PHP_NAMESPACED.findall(query)]
        return cls(names, plan.path_hints if names else [], namespaced if names else [],
                   file_today)

    def answered_by(self, result: VerifiedResult) -> bool:
        """The result is a definition of one of the names (by its name or its last part; a
        name written with its owner, ``ClassName.builder``, only as that owner's member, not
        ``AnnotationSpec.builder``), declares one by a line of its text (a constant, a field;
        a member only in its owner), or is the owner that declares a named member by its
        signature (an interface's method); a module's function is named with its module
        (``walk::scan`` by ``scan`` of ``walk.rs``), and a PHP namespace's by its name
        in a file that declares that namespace (``in_namespace``)."""
        record = result.record
        # ``Basket.this[]``, ``Money.operator+``: a query names them by their word.
        symbol = re.sub(r"\W+$", "", record.symbol.lower())
        owned = [dotted.lower().split("/") for dotted in self.dotted]
        parts = {part for path in owned for part in path}
        alone = [name for name in self.names if name.lower() not in parts]
        in_owner = [path[-1] for path in owned
                    if len(path) > 1 and own_name(symbol) == path[-2]]
        return named_by(symbol, {name.lower() for name in alone}) or \
            any(symbol == ".".join(path) or symbol.endswith("." + ".".join(path)) or
                "." in symbol and ".".join(path).endswith("." + symbol)  # its namespace too
                for path in owned) or \
            any(len(path) > 1 and symbol == path[-1] and module_name(record.path) == path[-2]
                for path in owned) or \
            defined_in_text(record.text, alone) or \
            bool(in_owner) and defined_in_text(record.text.lower(), in_owner) or \
            declares_member(record.symbol, record.text, self.dotted) or \
            self.in_namespace(result)

    def in_namespace(self, result: VerifiedResult) -> bool:
        """The result is a PHP namespace's function or class named as the query writes it
        with its namespace (``GuzzleHttp\\describe_type``, stored as ``describe_type``: a
        ``namespace X;`` statement names none of its file's symbols), in a file that declares
        that namespace where ``file_today`` reads the file."""
        record = result.record
        namespaces = {namespace.lower() for namespace, name in self.namespaced
                      if name.lower() == record.symbol.lower()}
        if not namespaces or record.language != "php":
            return False
        path, start, _end = result.lines_today
        try:
            text = self.file_today(path) if self.file_today is not None else None
        except UnsafePath:
            text = None
        return text is None or php_namespace_at(text, start).lower() in namespaces


def implementation_first(evidence: list[VerifiedResult], asked: AskedNames
                         ) -> list[VerifiedResult]:
    """Evidence with tests, examples and docs after the implementation (stable otherwise),
    except the definitions of the names the query is only made of (``runPatchTests``): asked
    for by name, they lead wherever they are defined; the implementation's first."""
    return sorted(evidence, key=lambda r: (not (asked.names and asked.answered_by(r)),
                                           is_secondary(r.record.path, r.record.file_kind)))
