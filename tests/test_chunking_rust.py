"""Rust chunking: impl blocks name methods after their type, traits, structs, enums, mods."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text
from freshmark.core.chunking.model import Chunk
from freshmark.core.declarations import declaring_row

LEDGER_RS = dedent(
    """\
    use std::collections::HashMap;
    use crate::money::{Amount, Currency};

    /// A ledger of balances.
    /// Keyed by account id.
    #[derive(Debug, Default)]
    pub struct Ledger {
        balances: HashMap<String, Amount>,
    }

    pub enum Entry {
        Credit(Amount),
        Debit(Amount),
    }

    pub trait Audit {
        fn audit(&self) -> Vec<String>;
    }

    impl Ledger {
        /// Applies one entry.
        pub fn apply(&mut self, account: &str, entry: Entry) -> Result<(), LedgerError> {
            let balance = self.balances.entry(account.to_string()).or_default();
            *balance = settle(*balance, entry)?;
            Ok(())
        }
    }

    impl Audit for Ledger {
        fn audit(&self) -> Vec<String> {
            self.balances.keys().cloned().collect()
        }
    }

    mod fees {
        pub fn flat(amount: Amount) -> Amount {
            Amount::new(amount.value() / 100)
        }
    }
    """
)


def by_symbol(chunks: list[Chunk]) -> dict[str, Chunk]:
    return {chunk.symbol: chunk for chunk in chunks}


def test_rust_units_name_impl_methods_after_their_type() -> None:
    chunks = chunk_text("src/ledger.rs", LEDGER_RS)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 2),
        ("Ledger", "struct", 4, 9),
        ("Entry", "enum", 11, 14),
        ("Audit", "trait", 16, 18),
        ("impl Ledger", "impl", 20, 27),
        ("Ledger.apply", "method", 21, 26),
        ("impl Audit for Ledger", "impl", 29, 33),
        ("Ledger.audit", "method", 30, 32),
        ("fees", "module", 35, 39),
        ("fees.flat", "function", 36, 38),
    ]


def test_rust_doc_comments_and_attributes_belong_to_the_struct() -> None:
    ledger = by_symbol(chunk_text("ledger.rs", LEDGER_RS))["Ledger"]
    assert ledger.doc == "A ledger of balances.\nKeyed by account id."
    assert ledger.text.splitlines()[2] == "#[derive(Debug, Default)]"
    assert ledger.signature == "pub struct Ledger"


def test_rust_impl_chunk_holds_method_signatures_only() -> None:
    impl = by_symbol(chunk_text("ledger.rs", LEDGER_RS))["impl Ledger"]
    assert impl.text == dedent(
        """\
        impl Ledger {
            pub fn apply(&mut self, account: &str, entry: Entry) -> Result<(), LedgerError> {
                ...
            }
        }"""
    )


def test_rust_method_doc_signature_imports_and_references() -> None:
    apply = by_symbol(chunk_text("ledger.rs", LEDGER_RS))["Ledger.apply"]
    assert apply.doc == "Applies one entry."
    assert apply.signature == (
        "pub fn apply(&mut self, account: &str, entry: Entry) -> Result<(), LedgerError>"
    )
    assert apply.imports == ["std::collections::HashMap", "crate::money::{Amount, Currency}"]
    assert apply.references == ["Entry", "Result", "LedgerError", "entry", "to_string",
                                "or_default", "settle", "Ok"]  # fmt: skip


def test_rust_path_calls_reference_both_type_and_function() -> None:
    flat = by_symbol(chunk_text("ledger.rs", LEDGER_RS))["fees.flat"]
    assert flat.references == ["Amount", "new", "value"]


def test_rust_impl_for_a_reference_type_names_its_members_by_the_type() -> None:
    source = ("impl<'de, R: Read<'de>> de::Deserializer<'de> for &mut Deserializer<R> {\n"
              "    fn deserialize_any<V>(self, visitor: V) -> Result<V::Value> { visitor }\n}\n"
              "impl<'a, W: io::Write> ser::Serializer for &'a mut Serializer<W> {\n"
              "    fn serialize_str(self, value: &str) -> Result<()> { Ok(()) }\n}\n")
    symbols = [chunk.symbol for chunk in chunk_text("src/de.rs", source)]
    assert "Deserializer.deserialize_any" in symbols
    assert "Serializer.serialize_str" in symbols
    assert not any("&" in symbol or "mut" in symbol for symbol in symbols)


def test_rust_impls_of_one_trait_are_told_apart_by_its_arguments_and_slices_are_named() -> None:
    source = ("impl From<Vec<u8>> for Bytes {\n    fn from(vec: Vec<u8>) -> Bytes { todo!() }\n}\n"
              "impl From<&'static str> for Bytes {\n"
              "    fn from(s: &'static str) -> Bytes { todo!() }\n}\n"
              "unsafe impl BufMut for &mut [core::mem::MaybeUninit<u8>] {\n"
              "    fn put_slice(&mut self, src: &[u8]) {}\n}\n"
              "impl<'de> de::Deserializer<'de> for Reader {\n    fn read(self) {}\n}\n")
    symbols = [chunk.symbol for chunk in chunk_text("src/bytes.rs", source)]
    assert "impl From<Vec<u8>> for Bytes" in symbols
    assert "impl From<&'static str> for Bytes" in symbols
    assert "impl BufMut for [MaybeUninit]" in symbols and "[MaybeUninit].put_slice" in symbols
    assert "impl de.Deserializer for Reader" in symbols


def test_a_rust_call_through_a_module_path_does_not_reference_the_module() -> None:
    source = "fn as_slice(&self) -> &[u8] {\n    unsafe { slice::from_raw_parts(self.ptr, 1) }\n}\n"
    (chunk,) = chunk_text("src/bytes.rs", source)
    assert "slice" not in chunk.references and "from_raw_parts" in chunk.references


def test_a_module_type_alias_is_a_definition_and_an_associated_type_a_line_of_its_impl():
    chunks = chunk_text("src/lib.rs", dedent("""\
        /// The result type.
        pub type Result<T, E = Error> = core::result::Result<T, E>;

        impl Iterator for Chain {
            type Item = u8;

            fn next(&mut self) -> Option<u8> {
                None
            }
        }
        """))
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("Result", "interface", 1, 2),
        ("impl Iterator for Chain", "impl", 4, 10),
        ("Chain.next", "method", 7, 9),
    ]


LOG_MACROS_RS = dedent("""\
    #[macro_export]
    macro_rules! __log_enabled {
        (logger: $logger:expr, $lvl:expr) => {{
            let lvl = $lvl;
            if (lvl <= $crate::STATIC_MAX_LEVEL) && lvl <= $crate::max_level() {
                $crate::__private_api::enabled($logger, lvl, $crate::__log_target!())
            } else { $logger.flush() }
        }};
        ($($arg:tt)+) => ($crate::log!($crate::Level::Error, $($arg)+));
    }
    """)


def test_a_rust_macro_references_what_its_rules_call_and_the_crate_items_they_reach():
    (chunk,) = chunk_text("src/macros.rs", LOG_MACROS_RS)
    assert chunk.references == ["STATIC_MAX_LEVEL", "max_level", "enabled", "__log_target",
                                "flush", "log", "Level"]


def test_a_rust_module_block_declares_its_statics_and_consts_behind_any_visibility():
    chunks = chunk_text("src/lib.rs", dedent("""\
        use std::sync::atomic::AtomicUsize;

        static mut LOGGER: &dyn Log = &NopLogger;
        pub(crate) static STATE: AtomicUsize = AtomicUsize::new(0);
        pub(in crate::kv) const MAX_KEYS: usize = 16;
        pub const STATIC_MAX_LEVEL: LevelFilter = LevelFilter::Trace;
        """))
    (block,) = [chunk for chunk in chunks if chunk.kind == "block"]
    rows = [declaring_row(block.text, [name])
            for name in ("LOGGER", "STATE", "MAX_KEYS", "STATIC_MAX_LEVEL")]
    assert [block.start_line + row for row in rows if row is not None] == [3, 4, 5, 6]
