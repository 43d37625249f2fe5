"""Java chunking: classes, interfaces, enums, constructors, nested classes, javadoc."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text
from freshmark.core.chunking.model import Chunk

ORDER_SERVICE_JAVA = dedent(
    """\
    package com.shop.orders;

    import java.time.Instant;
    import java.util.List;
    import static com.shop.util.Checks.*;

    /**
     * Cancels and ships orders.
     */
    @Service
    public class OrderService extends BaseService implements Cancellable {
        private final OrderRepository repository;

        public OrderService(OrderRepository repository) {
            this.repository = repository;
        }

        /** Cancels one order. */
        @Override
        @Transactional
        public Order cancelOrder(String orderId) throws OrderNotFound {
            Order order = repository.findById(orderId);
            order.setCancelledAt(Instant.now());
            return repository.save(order);
        }

        static class Audit {
            void record(AuditEvent event) {
                AuditLog.write(event);
            }
        }

        enum Reason {
            CUSTOMER, FRAUD;

            String label() {
                return name().toLowerCase();
            }
        }
    }

    interface Cancellable {
        Order cancelOrder(String orderId) throws OrderNotFound;
    }
    """
)


def by_symbol(chunks: list[Chunk]) -> dict[str, Chunk]:
    return {chunk.symbol: chunk for chunk in chunks}


def test_java_units_nest_classes_enums_and_name_constructors_after_the_class() -> None:
    chunks = chunk_text("src/main/java/com/shop/orders/OrderService.java", ORDER_SERVICE_JAVA)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 5),
        ("OrderService", "class", 7, 40),
        ("OrderService.OrderService", "method", 14, 16),
        ("OrderService.cancelOrder", "method", 18, 25),
        ("OrderService.Audit", "class", 27, 31),
        ("OrderService.Audit.record", "method", 28, 30),
        ("OrderService.Reason", "enum", 33, 39),
        ("OrderService.Reason.label", "method", 36, 38),
        ("Cancellable", "interface", 42, 44),
    ]


def test_java_javadoc_and_annotations_belong_to_the_method_but_not_its_signature() -> None:
    cancel = by_symbol(chunk_text("OrderService.java", ORDER_SERVICE_JAVA))[
        "OrderService.cancelOrder"
    ]
    assert cancel.doc == "Cancels one order."
    assert cancel.text.splitlines()[:3] == [
        "    /** Cancels one order. */",
        "    @Override",
        "    @Transactional",
    ]
    assert cancel.signature == "public Order cancelOrder(String orderId) throws OrderNotFound"


def test_java_class_summary_lists_fields_and_member_signatures() -> None:
    service = by_symbol(chunk_text("OrderService.java", ORDER_SERVICE_JAVA))["OrderService"]
    assert service.text.splitlines()[3:13] == [
        "@Service",
        "public class OrderService extends BaseService implements Cancellable {",
        "    private final OrderRepository repository;",
        "",
        "    public OrderService(OrderRepository repository) {",
        "        ...",
        "    }",
        "",
        "    @Override",
        "    @Transactional",
    ]
    assert (
        service.signature == "public class OrderService extends BaseService implements Cancellable"
    )
    assert service.doc == "Cancels and ships orders."


def test_java_imports_and_references() -> None:
    cancel = by_symbol(chunk_text("OrderService.java", ORDER_SERVICE_JAVA))[
        "OrderService.cancelOrder"
    ]
    assert cancel.imports == ["java.time.Instant", "java.util.List", "com.shop.util.Checks.*"]
    assert cancel.references == [
        "Override", "Transactional", "Order", "String", "OrderNotFound", "findById",
        "setCancelledAt", "Instant", "now", "save",
    ]  # fmt: skip


def test_java_interface_keeps_abstract_method_signatures_in_its_own_chunk() -> None:
    cancellable = by_symbol(chunk_text("OrderService.java", ORDER_SERVICE_JAVA))["Cancellable"]
    assert "    Order cancelOrder(String orderId) throws OrderNotFound;" in cancellable.text


def test_an_enum_constant_with_a_body_is_a_class_of_its_methods_and_a_plain_one_no_unit():
    source = dedent(
        """\
        enum State {
            Start {
                boolean process(String t) {
                    return adoptionAgency(t);
                }

                private boolean adoptionAgency(String t) {
                    return t.isEmpty();
                }
            },
            Plain;

            boolean process(String t) {
                return false;
            }
        }
        """
    )
    kinds = {c.symbol: c.kind for c in chunk_text("State.java", source)}
    assert kinds["State.Start"] == "class"
    assert kinds["State.Start.adoptionAgency"] == "method"
    assert kinds["State.process"] == "method"
    assert "State.Plain" not in kinds


CONVERTER_JAVA = dedent(
    """\
    public interface Converter<T, E extends Throwable> {
        Converter<Object, RuntimeException> DEFAULT = s -> s;

        /** Parses a date. */
        Converter<Date, ParseException> DATE = s -> {
            throw new ParseException("Unparseable date: " + s, 0);
        };

        int LIMIT = 3;

        T apply(String string) throws E;
    }

    class Sorting {
        static final Comparator<String> BY_LENGTH = new Comparator<String>() {
            public int compare(String a, String b) {
                return a.length() - b.length();
            }
        };

        Runnable first = () -> {
            go();
        }, second = null;
    }
    """
)


def test_a_java_interface_constant_holding_a_lambda_is_a_method_of_its_name():
    date = by_symbol(chunk_text("Converter.java", CONVERTER_JAVA))["Converter.DATE"]
    assert date.kind == "method"
    assert (date.start_line, date.end_line) == (4, 7)
    assert "Unparseable date" in date.text
    assert date.signature == "Converter<Date, ParseException> DATE = s ->"


def test_a_java_field_holding_an_anonymous_class_is_a_method_of_its_name():
    comparator = by_symbol(chunk_text("Converter.java", CONVERTER_JAVA))["Sorting.BY_LENGTH"]
    assert comparator.kind == "method"
    assert "return a.length() - b.length();" in comparator.text


def test_the_owner_outline_elides_a_lambda_field_and_keeps_data_and_one_line_fields():
    chunks = by_symbol(chunk_text("Converter.java", CONVERTER_JAVA))
    outline = chunks["Converter"].text
    assert "Unparseable date" not in outline
    assert "    Converter<Object, RuntimeException> DEFAULT = s -> s;" in outline
    assert "    int LIMIT = 3;" in outline
    assert {"Converter.DEFAULT", "Converter.LIMIT"}.isdisjoint(chunks)


def test_a_java_declaration_of_several_fields_is_no_unit():
    assert "Sorting.first" not in by_symbol(chunk_text("Converter.java", CONVERTER_JAVA))
