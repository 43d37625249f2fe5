"""C#, Ruby and PHP chunking (best effort): namespaces, classes, methods, imports."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text
from freshmark.core.chunking.model import Chunk

ORDERS_CS = dedent(
    """\
    using System.Linq;
    using Json = System.Text.Json;

    namespace Shop.Orders
    {
        /// <summary>Cancels orders.</summary>
        [Service]
        public class OrderService : ServiceBase, ICancel
        {
            public OrderService(IRepository repo) { _repo = repo; }

            public int Retries { get; set; }

            public Order Cancel(string id)
            {
                var order = _repo.Find(id);
                return Audit.Record(order);
            }
        }

        public interface ICancel { Order Cancel(string id); }
    }
    """
)

BILLING_RB = dedent(
    """\
    require 'json'
    require_relative "money"

    # Billing for accounts.
    module Billing
      # One invoice.
      class Invoice < Document
        def total(tax = 0)
          lines.sum(&:amount) + Money.round(tax)
        end

        def self.build(attrs)
          new(attrs)
        end

        class << self
          def cached; end
        end
      end
    end
    """
)

ORDERS_PHP = dedent(
    """\
    <?php
    namespace App\\Services;

    use App\\Models\\Order;
    use Psr\\Log\\LoggerInterface as Logger;

    /** Cancels orders. */
    #[AsService]
    final class OrderService extends BaseService implements Cancels
    {
        public function cancel(string $id): Order
        {
            $order = $this->repo->find($id);
            return OrderEvents::cancelled($order);
        }
    }

    interface Cancels { public function cancel(string $id): Order; }

    trait Audits { public function audit(): void { write_log('x'); } }

    function helper(): Order { return new Order(); }
    """
)


def by_symbol(chunks: list[Chunk]) -> dict[str, Chunk]:
    return {chunk.symbol: chunk for chunk in chunks}


def test_csharp_namespace_prefixes_class_and_member_names() -> None:
    chunks = chunk_text("Orders/OrderService.cs", ORDERS_CS)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 2),
        ("Shop.Orders.OrderService", "class", 6, 19),
        ("Shop.Orders.OrderService.OrderService", "method", 10, 10),
        ("Shop.Orders.OrderService.Cancel", "method", 14, 18),
        ("Shop.Orders.ICancel", "interface", 21, 21),
    ]


def test_csharp_doc_signature_imports_and_references() -> None:
    chunks = by_symbol(chunk_text("OrderService.cs", ORDERS_CS))
    service = chunks["Shop.Orders.OrderService"]
    assert service.doc == "<summary>Cancels orders.</summary>"
    assert service.signature == "public class OrderService : ServiceBase, ICancel"
    cancel = chunks["Shop.Orders.OrderService.Cancel"]
    assert cancel.imports == ["System.Linq", "System.Text.Json"]
    assert cancel.references == ["Order", "_repo", "Find", "Audit", "Record"]


HANDLERS_CS = dedent(
    """\
    namespace Shop.Events
    {
        using System;

        public delegate void OrderHandler(Order order);

        public class Bus
        {
            public void Publish(Order order) { Handler(order); }
        }
    }
    """
)


def test_csharp_code_between_the_units_of_a_namespace_is_a_module_block_of_its_own() -> None:
    chunks = chunk_text("Events/Bus.cs", HANDLERS_CS)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("Shop.Events", "module", 1, 11),
        ("<module>", "block", 3, 3),
        ("Shop.Events.OrderHandler", "function", 5, 5),  # a delegate
        ("Shop.Events.Bus", "class", 7, 10),
        ("Shop.Events.Bus.Publish", "method", 9, 9),
    ]


SETTINGS_CS = """namespace Cli
{
    public class ParserSettings
    {
        public ParserSettings() { caseSensitive = true; }

        ~ParserSettings() { Dispose(false); }

        public bool CaseSensitive
        {
            get { return caseSensitive; }
            set { caseSensitive = value; }
        }

        public bool AutoHelp { get; set; }

        public int Width => maximumDisplayWidth;

        public bool Wide { get => Width > 80; }
    }
}
"""


def test_csharp_properties_with_code_are_units_and_auto_properties_stay_in_the_outline():
    chunks = by_symbol(chunk_text("ParserSettings.cs", SETTINGS_CS))
    assert {name: (c.kind, c.start_line, c.end_line) for name, c in chunks.items()
            if name.count(".") == 2} == {
        "Cli.ParserSettings.ParserSettings": ("method", 5, 5),
        "Cli.ParserSettings.~ParserSettings": ("method", 7, 7),
        "Cli.ParserSettings.CaseSensitive": ("method", 9, 13),
        "Cli.ParserSettings.Width": ("method", 17, 17),
        "Cli.ParserSettings.Wide": ("method", 19, 19),
    }
    assert "public bool AutoHelp { get; set; }" in chunks["Cli.ParserSettings"].text


INDEXED_CS = """namespace Shop
{
    public class Basket
    {
        private readonly List<Item> items = new();

        public Item this[int index]
        {
            get { return items[index]; }
            set { items[index] = value; }
        }

        public Item this[string name] => items.First(i => i.Name == name);
    }

    public interface IBag
    {
        Item this[int index] { get; }
    }
}
"""


def test_csharp_indexers_with_code_are_units_named_as_written_and_declared_ones_are_not():
    units = {(c.symbol, c.start_line, c.end_line) for c in chunk_text("Basket.cs", INDEXED_CS)
             if c.kind == "method"}
    assert units == {("Shop.Basket.this[]", 7, 11), ("Shop.Basket.this[]", 13, 13)}


def test_ruby_modules_classes_singleton_methods_and_requires() -> None:
    chunks = chunk_text("lib/billing.rb", BILLING_RB)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 2),
        ("Billing", "module", 4, 20),
        ("Billing.Invoice", "class", 6, 19),
        ("Billing.Invoice.total", "method", 8, 10),
        ("Billing.Invoice.build", "method", 12, 14),
        ("Billing.Invoice.cached", "method", 17, 17),
    ]
    invoice = by_symbol(chunks)["Billing.Invoice"]
    assert (invoice.signature, invoice.doc) == ("class Invoice < Document", "One invoice.")
    total = by_symbol(chunks)["Billing.Invoice.total"]
    assert total.imports == ["json", "money"]
    assert total.references == ["lines", "sum", "Money", "round"]


def test_php_classes_interfaces_traits_functions_and_use_imports() -> None:
    chunks = chunk_text("src/Services/OrderService.php", ORDERS_PHP)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 5),
        ("OrderService", "class", 7, 16),
        ("OrderService.cancel", "method", 11, 15),
        ("Cancels", "interface", 18, 18),
        ("Audits", "trait", 20, 20),
        ("Audits.audit", "method", 20, 20),
        ("helper", "function", 22, 22),
    ]
    cancel = by_symbol(chunks)["OrderService.cancel"]
    assert cancel.signature == "public function cancel(string $id): Order"
    assert cancel.imports == ["App\\Models\\Order", "Psr\\Log\\LoggerInterface"]
    assert cancel.references == ["Order", "find", "OrderEvents", "cancelled"]
    assert by_symbol(chunks)["OrderService"].doc == "Cancels orders."


def test_csharp_operators_are_chunks_named_as_cpp_names_them() -> None:
    text = dedent("""\
        public readonly struct Unit
        {
            /// <summary>Compares two units.</summary>
            public static bool operator ==(Unit first, Unit second) => true;

            public static implicit operator int(Unit u) => 0;
        }
    """)
    assert [(c.symbol, c.start_line, c.end_line) for c in chunk_text("Unit.cs", text)
            if c.kind == "method"] == [("Unit.operator==", 3, 4), ("Unit.operator int", 6, 6)]


def test_csharp_members_under_if_and_else_directives_are_the_classs_methods() -> None:
    source = dedent(
        """\
        namespace P;

        public sealed class Pool
        {
        #if NET8_0_OR_GREATER
            private void EnsureNotDisposed() => ObjectDisposedException.ThrowIf(_disposed, this);
        #else
            private void EnsureNotDisposed()
            {
                if (_disposed) throw new ObjectDisposedException(nameof(Pool));
            }
        #endif
        }
        """
    )
    chunks = chunk_text("Pool.cs", source)
    assert [c.start_line for c in chunks if c.symbol == "Pool.EnsureNotDisposed"] == [6, 8]


def test_a_csharp_delegate_is_a_definition_of_its_own_with_its_doc():
    chunks = chunk_text("src/Polly/ExceptionPredicate.cs", dedent("""\
        namespace Polly;

        /// <summary>A filter of exceptions.</summary>
        public delegate Exception ExceptionPredicate(Exception ex);
        """))
    (predicate,) = [c for c in chunks if c.symbol == "ExceptionPredicate"]
    assert (predicate.start_line, predicate.end_line) == (3, 4)
    assert predicate.signature == "public delegate Exception ExceptionPredicate(Exception ex)"


def test_a_preprocessor_line_inside_a_csharp_header_is_no_part_of_its_signature():
    chunks = chunk_text("src/Polly/Policy.cs", dedent("""\
        namespace Polly;

        public abstract partial class Policy<TResult>
        #pragma warning restore CA1724
        {
            public void Run() { }
        }
        """))
    assert by_symbol(chunks)["Policy"].signature == "public abstract partial class Policy<TResult>"
