"""Kotlin and Swift chunking: classes, objects and companions, interfaces and protocols, Swift
extensions, doc comments, imports and references."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text, file_imports
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
