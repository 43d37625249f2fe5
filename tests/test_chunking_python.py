"""Python chunking: functions, classes with member signatures, decorators, docstrings, blocks."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text
from freshmark.core.chunking.model import Chunk

ORDER_SERVICE = dedent(
    '''\
    """Order services."""
    import logging
    from datetime import datetime
    from .models import Order, OrderStatus
    from .repo import OrderRepository as Repo

    log = logging.getLogger(__name__)


    # Coordinates order state changes.
    class OrderService(BaseService):
        """Cancels and ships orders."""

        retries = 3

        def __init__(self, repo: Repo) -> None:
            self.repo = repo

        # Cancelling is idempotent.
        @transactional(read_only=False)
        def cancel_order(self, order_id: str) -> Order:
            """Cancel the order and record when."""
            order = self.repo.get(order_id)
            if order.status is OrderStatus.SHIPPED:
                raise OrderAlreadyShipped(order_id)
            order.cancelled_at = datetime.now()
            return self.repo.save(order)

        class Audit:
            def record(self, event: AuditEvent) -> None:
                write_audit(event)


    def make_service(dsn):
        import sqlalchemy
        return OrderService(Repo(sqlalchemy.create_engine(dsn)))


    if __name__ == "__main__":
        make_service("sqlite://")
    '''
)


def chunks_by_symbol(chunks: list[Chunk]) -> dict[str, Chunk]:
    return {chunk.symbol: chunk for chunk in chunks if chunk.part <= 1}


def test_every_unit_and_module_block_gets_its_own_chunk_in_source_order() -> None:
    chunks = chunk_text("src/orders/service.py", ORDER_SERVICE)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 7),
        ("OrderService", "class", 10, 31),
        ("OrderService.__init__", "method", 16, 17),
        ("OrderService.cancel_order", "method", 19, 27),
        ("OrderService.Audit", "class", 29, 31),
        ("OrderService.Audit.record", "method", 30, 31),
        ("make_service", "function", 34, 36),
        ("<module>#2", "block", 39, 40),
    ]


def test_comment_above_decorators_and_the_decorators_belong_to_the_method() -> None:
    cancel = chunks_by_symbol(chunk_text("service.py", ORDER_SERVICE))["OrderService.cancel_order"]
    assert cancel.text.splitlines()[0] == "    # Cancelling is idempotent."
    assert cancel.text.splitlines()[1] == "    @transactional(read_only=False)"
    assert cancel.text.splitlines()[-1] == "        return self.repo.save(order)"


def test_docstring_is_the_doc_and_signature_is_one_line_without_decorators() -> None:
    cancel = chunks_by_symbol(chunk_text("service.py", ORDER_SERVICE))["OrderService.cancel_order"]
    assert cancel.doc == "Cancel the order and record when."
    assert cancel.signature == "def cancel_order(self, order_id: str) -> Order"


def test_comment_is_the_doc_when_there_is_no_docstring() -> None:
    source = "# Adds two numbers.\n# Never overflows.\ndef add(a, b):\n    return a + b\n"
    (add,) = chunk_text("m.py", source)
    assert (add.doc, add.start_line) == ("Adds two numbers.\nNever overflows.", 1)


def test_comment_separated_by_a_blank_line_is_not_bound() -> None:
    source = "# Section: helpers\n\ndef add(a, b):\n    return a + b\n"
    chunks = chunk_text("m.py", source)
    # not its doc, but no block of its own either (the section's title starts its chunk)
    assert [(c.symbol, c.start_line, c.doc) for c in chunks] == [("add", 1, "")]


def test_class_chunk_holds_member_signatures_not_member_bodies() -> None:
    service = chunks_by_symbol(chunk_text("service.py", ORDER_SERVICE))["OrderService"]
    assert service.text == dedent(
        '''\
        # Coordinates order state changes.
        class OrderService(BaseService):
            """Cancels and ships orders."""

            retries = 3

            def __init__(self, repo: Repo) -> None:
                ...

            @transactional(read_only=False)
            def cancel_order(self, order_id: str) -> Order:
                ...

            class Audit:
                ...'''
    )
    assert service.signature == "class OrderService(BaseService)"
    assert service.doc == "Cancels and ships orders."


def test_method_text_is_the_exact_source_lines() -> None:
    init = chunks_by_symbol(chunk_text("service.py", ORDER_SERVICE))["OrderService.__init__"]
    lines = ORDER_SERVICE.splitlines()
    assert init.text == "\n".join(lines[init.start_line - 1 : init.end_line])


def test_file_imports_reach_every_chunk_and_local_imports_only_their_function() -> None:
    chunks = chunks_by_symbol(chunk_text("service.py", ORDER_SERVICE))
    file_level = ["logging", "datetime", ".models", ".repo"]
    assert chunks["OrderService.__init__"].imports == file_level
    assert chunks["make_service"].imports == [*file_level, "sqlalchemy"]


def test_references_are_calls_and_type_names_without_own_name_self_or_builtins() -> None:
    chunks = chunks_by_symbol(chunk_text("service.py", ORDER_SERVICE))
    assert chunks["OrderService.cancel_order"].references == [
        "transactional", "Order", "get", "OrderStatus", "OrderAlreadyShipped", "datetime", "now",
        "save",
    ]  # fmt: skip
    assert chunks["make_service"].references == [
        "OrderService", "Repo", "sqlalchemy", "create_engine",
    ]  # fmt: skip
    assert chunks["OrderService"].references[:1] == ["BaseService"]


def test_module_block_keeps_top_level_statements_together() -> None:
    first = chunk_text("service.py", ORDER_SERVICE)[0]
    assert first.text.splitlines()[-1] == "log = logging.getLogger(__name__)"
    assert first.signature == '"""Order services."""'
    assert first.references == ["logging", "getLogger"]


def test_async_functions_and_nested_functions_stay_in_their_parent() -> None:
    source = dedent(
        """\
        async def fetch_all(urls):
            async def one(url):
                return await get(url)
            return [await one(u) for u in urls]
        """
    )
    (chunk,) = chunk_text("fetch.py", source)
    assert (chunk.symbol, chunk.kind, chunk.signature) == (
        "fetch_all", "function", "async def fetch_all(urls)",
    )  # fmt: skip


def test_definitions_under_a_modules_if_or_try_are_units_and_no_line_is_lost() -> None:
    source = dedent(
        """\
        import sys

        if sys.platform == "win32":

            def registry_lookup(host):
                return host

        else:

            def registry_lookup(host):
                return None

        try:
            from json import loads
        except ImportError:
            def loads(text):
                return text
        """
    )
    chunks = chunk_text("plat.py", source)
    assert [c.symbol for c in chunks if c.kind == "function"] == [
        "registry_lookup", "registry_lookup", "loads"]
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert all(n in covered for n, line in enumerate(source.splitlines(), 1) if line.strip())


def test_a_class_used_as_a_value_is_a_reference_and_a_constant_is_not() -> None:
    source = ("def stream_type(args):\n"
              "    chosen = PrettyStream if args.prettify else BufferedPrettyStream\n"
              "    formats = {'json': JSONFormatter, 'limit': MAX_SIZE}\n"
              "    register(EncodedStream, DEFAULT_TIMEOUT)\n"
              "    return HTTPResponse\n")
    (chunk,) = chunk_text("httpie/output/writer.py", source)
    assert set(chunk.references) == {"PrettyStream", "BufferedPrettyStream", "JSONFormatter",
                                     "register", "EncodedStream", "HTTPResponse"}


def test_a_builtins_name_called_through_a_receiver_is_a_reference_and_called_bare_is_not(
) -> None:
    source = ("def ask(prompt):\n"
              "    print(prompt)\n"
              "    return input(prompt)\n\n\n"
              "def get_input(console, prompt):\n"
              "    console.print(prompt)\n"
              "    return console.input(prompt)\n")
    chunks = {c.symbol: c for c in chunk_text("rich/prompt.py", source)}
    assert chunks["ask"].references == []
    assert chunks["get_input"].references == ["console", "print", "input"]


def test_a_section_title_between_definitions_starts_the_next_one_not_a_block_of_its_own():
    # httpx's ``# Timeout exceptions...``: a block of one comment took a result's place.
    source = ('class TransportError(Exception):\n    """A transport error."""\n\n\n'
              "# Timeout exceptions...\n\n\n"
              'class TimeoutException(TransportError):\n    """A timeout."""\n\n\n'
              "# The end.\n")
    chunks = chunk_text("errors.py", source)
    assert [(c.symbol, c.start_line, c.end_line) for c in chunks] == [
        ("TransportError", 1, 2), ("TimeoutException", 5, 9), ("<module>", 12, 12)]
    assert chunks[1].text.startswith("# Timeout exceptions...") and chunks[1].doc == "A timeout."
