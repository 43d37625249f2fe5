"""Go chunking: receivers name methods, type declarations make structs and interfaces."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text
from freshmark.core.chunking.model import Chunk

PAYMENT_GO = dedent(
    """\
    package payment

    import (
    \t"errors"
    \tlog "github.com/sirupsen/logrus"
    )

    // Payment is a captured card payment.
    type Payment struct {
    \tID     string
    \tAmount int64
    }

    type (
    \t// Refunder gives money back.
    \tRefunder interface {
    \t\tRefund(amount int64) error
    \t}
    \tCurrency string
    )

    // Refund returns part of the payment.
    func (p *Payment) Refund(amount int64) error {
    \tif amount > p.Amount {
    \t\treturn errors.New("refund exceeds payment")
    \t}
    \tlog.Infof("refund %d", amount)
    \treturn charge(p.ID, -amount)
    }

    func (s Stack[T]) Push(v T) {}

    func NewPayment(id string) *Payment {
    \treturn &Payment{ID: id}
    }
    """
)


def by_symbol(chunks: list[Chunk]) -> dict[str, Chunk]:
    return {chunk.symbol: chunk for chunk in chunks}


def test_go_units_with_receiver_methods_and_grouped_types() -> None:
    chunks = chunk_text("payment/payment.go", PAYMENT_GO)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 6),
        ("Payment", "struct", 8, 12),
        ("Refunder", "interface", 15, 18),
        ("Currency", "class", 19, 19),
        ("Payment.Refund", "method", 22, 29),
        ("Stack.Push", "method", 31, 31),
        ("NewPayment", "function", 33, 35),
    ]


def test_go_method_signature_keeps_the_receiver() -> None:
    refund = by_symbol(chunk_text("payment.go", PAYMENT_GO))["Payment.Refund"]
    assert refund.signature == "func (p *Payment) Refund(amount int64) error"
    assert refund.doc == "Refund returns part of the payment."


def test_go_struct_chunk_is_the_whole_type_declaration_with_its_doc() -> None:
    payment = by_symbol(chunk_text("payment.go", PAYMENT_GO))["Payment"]
    assert payment.signature == "type Payment struct"
    assert payment.doc == "Payment is a captured card payment."
    assert payment.text.splitlines()[-1] == "}"


def test_go_grouped_type_specs_get_type_in_their_signature_and_their_own_doc() -> None:
    refunder = by_symbol(chunk_text("payment.go", PAYMENT_GO))["Refunder"]
    assert refunder.signature == "type Refunder interface"
    assert refunder.doc == "Refunder gives money back."


def test_go_imports_are_paths_and_references_skip_predeclared_types() -> None:
    refund = by_symbol(chunk_text("payment.go", PAYMENT_GO))["Payment.Refund"]
    assert refund.imports == ["errors", "github.com/sirupsen/logrus"]
    assert refund.references == ["Payment", "errors", "New", "log", "Infof", "charge", "ID"]


def test_a_function_delegating_to_a_namesake_references_it_and_a_type_never_itself() -> None:
    source = dedent(
        """\
        package logrus

        type Entry struct {
        \tData Fields
        }

        // WithField adds a field through the standard logger.
        func WithField(key string, value interface{}) *Entry {
        \treturn std.WithField(key, value)
        }
        """
    )
    chunks = by_symbol(chunk_text("exported.go", source))
    assert "WithField" in chunks["WithField"].references
    assert "Entry" not in chunks["Entry"].references


def test_a_package_doc_longer_than_a_chunk_is_cut_into_chunks_of_the_usual_size() -> None:
    rules = "".join(f"// Rule {n}: a field tagged {n} is checked.\n" + ("//\n" * (n % 7 == 0))
                    for n in range(400))
    source = "// Package validator implements value validations.\n//\n" + rules + \
        "package validator\n"
    parts = [(c.start_line, c.end_line) for c in chunk_text("doc.go", source)]
    assert len(parts) == 4 and all(end - start < 150 for start, end in parts)
    assert parts[0][0] == 1 and parts[-1][1] == source.count("\n")


def test_a_method_named_as_a_go_builtin_is_a_reference_and_the_builtin_is_not() -> None:
    source = "package pool\n\nfunc (c *Conn) shutdown() int {\n\tc.close()\n" \
             "\treturn len(c.buf)\n}\n"
    chunks = {c.symbol: c for c in chunk_text("pool/conn.go", source)}
    assert chunks["Conn.shutdown"].references == ["Conn", "close", "buf"]
