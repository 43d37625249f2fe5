"""Kotlin and Swift chunking: classes, objects and companions, interfaces and protocols, Swift
extensions, doc comments, imports and references."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text, file_imports
from freshmark.core.chunking.kotlin import kotlin_shown
from freshmark.core.chunking.model import Chunk

ORDER_KT = dedent(
    """\
    package com.example.shop

    import kotlin.math.max
    import com.example.util.Money as Cash

    /**
     * An order.
     */
    data class Order(val id: Int, val total: Double) {
        /** Cancel it. */
        fun cancel(reason: String): Boolean {
            log(reason)
            return total > 0
        }

        companion object {
            fun of(id: Int) = Order(id, 0.0)
        }
    }

    interface Repo {
        fun save(order: Order)
        fun load(id: Int): Order? = null
    }

    object Registry {
        fun register(repo: Repo) { repos.add(repo) }
    }

    fun <T> firstOf(items: List<T>): T = items.first()
    """
)

ORDER_SWIFT = dedent(
    """\
    import Foundation

    /// An order.
    public struct Order: Codable {
        let id: Int
        /// Cancel it.
        func cancel(reason: String) -> Bool {
            log(reason)
            return id > 0
        }
        init(id: Int) { self.id = id }
    }

    protocol Repo {
        func save(_ order: Order)
    }

    extension Order: Equatable {
        func isSame(as other: Order) -> Bool { id == other.id }
    }

    func firstOf<T>(_ items: [T]) -> T { items[0] }
    """
)


def by_symbol(chunks: list[Chunk]) -> dict[str, Chunk]:
    return {chunk.symbol: chunk for chunk in chunks}


def definition_kinds(chunks: dict[str, Chunk]) -> dict[str, str]:
    """Each definition's kind by its symbol (module blocks left out)."""
    return {symbol: chunk.kind for symbol, chunk in chunks.items()
            if not symbol.startswith("<module>")}


def test_kotlin_classes_objects_interfaces_and_companion_members_are_units() -> None:
    chunks = by_symbol(chunk_text("src/Order.kt", ORDER_KT))
    assert definition_kinds(chunks) == {
        "Order": "class", "Order.cancel": "method", "Order.of": "method", "Repo": "interface",
        "Repo.load": "method", "Registry": "class", "Registry.register": "method",
        "firstOf": "function"}
    cancel = chunks["Order.cancel"]
    assert (cancel.start_line, cancel.end_line, cancel.doc) == (10, 14, "Cancel it.")
    assert "log" in cancel.references


def test_kotlin_imports_and_their_aliases() -> None:
    assert file_imports("src/Order.kt", ORDER_KT) == ["kotlin.math.max", "com.example.util.Money"]


def test_swift_structs_protocols_and_extensions_name_their_members_by_the_type() -> None:
    chunks = by_symbol(chunk_text("Sources/Order.swift", ORDER_SWIFT))
    assert definition_kinds(chunks) == {
        "Order": "struct", "Order.cancel": "method", "Order.init": "method", "Repo": "interface",
        "extension Order": "impl", "Order.isSame": "method", "firstOf": "function"}
    cancel = chunks["Order.cancel"]
    assert (cancel.start_line, cancel.end_line, cancel.doc) == (6, 10, "Cancel it.")
    assert file_imports("Sources/Order.swift", ORDER_SWIFT) == ["Foundation"]


SHAPES_SWIFT = dedent(
    """\
    class Cache {
        var hits = 0
        let name: String
        /// The hit ratio.
        var ratio: Double {
            Double(hits) / 10
        }
        var size: Int {
            get { store.count }
            set { store.resize(newValue) }
        }
        subscript(key: String) -> Int { lookup(key) }
        deinit { flush() }
    }

    extension Cache {
        var label: String { "cache \\(name)" }
    }

    protocol Sized {
        var size: Int { get }
        subscript(i: Int) -> Int { get set }
    }
    """
)


def test_swift_computed_properties_subscripts_and_deinit_are_units_and_stored_ones_stay_outlined(
) -> None:
    chunks = by_symbol(chunk_text("Sources/Cache.swift", SHAPES_SWIFT))
    assert {name: (c.kind, c.start_line, c.end_line) for name, c in chunks.items()
            if name.startswith("Cache.")} == {
        "Cache.ratio": ("method", 4, 7),
        "Cache.size": ("method", 8, 11),
        "Cache.subscript": ("method", 12, 12),
        "Cache.deinit": ("method", 13, 13),
        "Cache.label": ("method", 17, 17),
    }
    assert chunks["Cache.ratio"].doc == "The hit ratio."
    assert chunks["Cache.size"].signature == "var size: Int"
    assert "lookup" in chunks["Cache.subscript"].references
    outline = chunks["Cache"].text
    assert "    var hits = 0\n    let name: String" in outline
    assert "Double(hits)" not in outline
    # a protocol's requirements are no units
    assert "subscript(i: Int) -> Int { get set }" in chunks["Sized"].text
    assert not [name for name in chunks if name.startswith("Sized.")]


def _switch_function(cases: int, lines_per_case: int) -> str:
    body = []
    for number in range(cases):
        body.append(f"    case {number}:")
        body.extend(f"        step{number}(line: {line})" for line in range(lines_per_case))
    return "func run(_ code: Int) {\n    switch code {\n" + "\n".join(body) + \
        "\n    default:\n        break\n    }\n}\n"


def test_swift_long_switch_functions_are_split_between_cases() -> None:
    source = _switch_function(cases=6, lines_per_case=6)  # 48 lines
    chunks = chunk_text("Sources/Run.swift", source, max_lines=20)
    lines = source.splitlines()
    assert [(c.symbol, c.part) for c in chunks] == [("run", 1), ("run", 2), ("run", 3)]
    assert all(c.end_line - c.start_line < 20 for c in chunks)
    for chunk in chunks[1:]:
        assert lines[chunk.start_line - 1].strip().startswith("case ")


def test_swift_implicit_member_calls_are_references() -> None:
    source = dedent(
        """\
        func pick(_ shell: Shell?) -> Shell? {
            let found = shell ?? .autodetected()
            return !isEmpty() ? found : .fallback(named: "sh")
        }
        """
    )
    (chunk,) = chunk_text("Sources/Pick.swift", source)
    assert {"autodetected", "isEmpty", "fallback"} <= set(chunk.references)


def test_swift_stored_property_a_closure_computes_once_is_a_unit() -> None:
    source = ("extension HTTPHeader {\n    public static let defaultUserAgent: HTTPHeader = {\n"
              "        let info = Bundle.main.infoDictionary\n        return .userAgent(info)\n"
              "    }()\n\n    public static let empty = HTTPHeader(name: \"\", value: \"\")\n}\n")
    units = [(c.symbol, c.start_line, c.end_line) for c in chunk_text("HTTPHeaders.swift", source)
             if c.kind == "method"]
    assert units == [("HTTPHeader.defaultUserAgent", 2, 5)]


def test_kotlin_class_whose_constructor_line_opens_with_actual_keeps_its_methods() -> None:
    source = ("actual open class ByteString\ninternal actual constructor(\n"
              "  internal actual val data: ByteArray,\n) : Comparable<ByteString> {\n"
              "  actual fun hex(): String = commonHex()\n\n"
              "  actual fun size(): Int = data.size\n}\n")
    chunks = by_symbol(chunk_text("okio/ByteString.kt", source))
    assert definition_kinds(chunks) == {"ByteString": "class", "ByteString.hex": "method",
                                        "ByteString.size": "method"}
    assert chunks["ByteString"].text.startswith("actual open class ByteString\ninternal actual")


def test_kotlin_variable_named_as_a_modifier_fails_no_function_after_it() -> None:
    source = ("class CipherSource {\n  private var final = false\n\n  fun refill() {\n"
              "    final = true\n  }\n\n  fun paths() {\n    val by = base / \"by\"\n"
              "    by.writeUtf8(\"by\")\n  }\n\n  fun close() = source.close()\n}\n")
    chunks = by_symbol(chunk_text("okio/CipherSource.kt", source))
    assert definition_kinds(chunks) == {
        "CipherSource": "class", "CipherSource.refill": "method",
        "CipherSource.paths": "method", "CipherSource.close": "method"}
    assert "writeUtf8" in chunks["CipherSource.paths"].references


def test_kotlin_annotated_getter_and_a_call_of_get_fail_no_method_after_them() -> None:
    source = ("class ByteString {\n  actual val size\n    @JvmName(\"size\")\n"
              "    get() = getSize()\n\n  fun toByteString(): ByteString {\n"
              "    val copy = ByteArray(remaining())\n    get(copy)\n"
              "    return ByteString(copy)\n  }\n\n  fun hex() = commonHex()\n}\n")
    chunks = by_symbol(chunk_text("okio/ByteString.kt", source))
    assert definition_kinds(chunks) == {
        "ByteString": "class", "ByteString.toByteString": "method", "ByteString.hex": "method"}


def test_kotlin_rewrite_keeps_every_byte_and_line_where_it_was() -> None:
    source = (b"class B\ninternal actual constructor(val x: Int) {\n  val size\n"
              b"    @JvmName(\"size\")\n    get() = 1\n  fun f() {\n    final = true\n"
              b"    get(copy)\n  }\n}\n")
    shown = kotlin_shown(source)
    assert shown != source
    assert len(shown) == len(source)
    assert [i for i, c in enumerate(shown) if c == 10] == \
        [i for i, c in enumerate(source) if c == 10]


def test_kotlin_scope_functions_are_references_only_through_a_receiver() -> None:
    source = ("fun copy(sink: Sink) {\n  run { sink.flush() }\n  with(sink) { emit() }\n"
              "  apply { close() }\n  also { println(it) }\n}\n\n"
              "fun start(task: Task) {\n  task.run()\n  task?.let { launch(it) }\n}\n")
    chunks = by_symbol(chunk_text("okio/Copy.kt", source))
    copy, start = chunks["copy"].references, chunks["start"].references
    assert {"flush", "emit", "close"} <= set(copy)
    assert not {"run", "with", "apply", "also"} & set(copy)
    assert {"run", "let", "launch"} <= set(start)


def test_an_outline_elides_a_member_body_whose_last_line_closes_nothing() -> None:
    # ``fun area(): Int =`` then ``width * height``: no closing line to keep after ``...``.
    steps = "".join(f"    fun step{n}(x: Int): Int {{\n" +
                    "".join(f"        val y{m} = x + {m}\n" for m in range(20)) +
                    "        return x\n    }\n\n" for n in range(10))
    source = ("class Shape(val width: Int, val height: Int) {\n    fun area(): Int =\n"
              "        width * height\n\n" + steps + "}\n")
    (outline,) = [c for c in chunk_text("Shape.kt", source) if c.kind == "class"]
    assert outline.text.startswith("class Shape(val width: Int, val height: Int) {\n"
                                   "    fun area(): Int =\n        ...\n")
