"""TypeScript declaration files (``.d.ts``): a ``declare namespace``'s exported values and
functions, which have no body, are its members; ``declare function`` overloads are one unit."""

from __future__ import annotations

from freshmark.core.chunking import chunk_text
from freshmark.core.chunking.model import CONTAINER_KINDS, Chunk

PINO_D_TS = """\
import type { SonicBoom } from 'sonic-boom'

declare namespace pino {
  type TimeFn = () => string

  export interface LevelMapping {
    values: { [level: string]: number };
  }

  /// Top level variable (const) exports

  /** Holds the level names and values. */
  export const levels: LevelMapping

  export const version: string

  export const stdTimeFunctions: {
    epochTime: TimeFn;
    isoTime: TimeFn;
  }

  /// Exported functions

  /** Create a Pino Destination instance. */
  export function destination (
    dest?: number | string,
  ): SonicBoom

  export function transport (options: object): SonicBoom

  export { pino as default, pino }
}

/**
 * @param [optionsOrStream]: an options object or a stream
 */
declare function pino (optionsOrStream?: pino.LoggerOptions): pino.Logger

/**
 * @param [options]: an options object
 */
declare function pino (options: pino.LoggerOptions, stream?: pino.DestinationStream): pino.Logger

export = pino
"""


def spans(chunks: list[Chunk]) -> list[tuple[str, str, int, int]]:
    return [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks]


def test_a_declared_namespace_s_exported_values_and_functions_are_its_members() -> None:
    chunks = chunk_text("pino.d.ts", PINO_D_TS)
    assert [span for span in spans(chunks) if span[1] != "block"] == [
        ("pino", "module", 3, 32),
        ("pino.TimeFn", "interface", 4, 4),
        ("pino.LevelMapping", "interface", 6, 8),
        ("pino.levels", "interface", 12, 13),
        ("pino.version", "interface", 15, 15),
        ("pino.stdTimeFunctions", "interface", 17, 20),
        ("pino.destination", "function", 24, 27),
        ("pino.transport", "function", 29, 29),
        ("pino", "function", 34, 42),
    ]


def test_a_declared_namespace_s_values_and_functions_are_in_no_module_block() -> None:
    chunks = chunk_text("pino.d.ts", PINO_D_TS)
    holders = {line: [c.symbol for c in chunks if c.kind not in CONTAINER_KINDS
                      and c.start_line <= line <= c.end_line] for line in range(12, 30)}
    assert all(len(symbols) <= 1 for symbols in holders.values())
    assert [line for line, symbols in holders.items()
            if symbols and symbols[0].startswith("<module>")] == [22]  # its comment alone


def test_an_exported_function_without_a_body_is_signed_by_its_declaration() -> None:
    destination = next(c for c in chunk_text("pino.d.ts", PINO_D_TS)
                       if c.symbol == "pino.destination")
    assert destination.signature == \
        "function destination ( dest?: number | string, ): SonicBoom"
    assert destination.doc == "Create a Pino Destination instance."


def test_declare_function_overloads_are_one_function_with_both_docs() -> None:
    (pino,) = [c for c in chunk_text("pino.d.ts", PINO_D_TS) if c.kind == "function"
               and c.symbol == "pino"]
    assert "options: pino.LoggerOptions, stream?" in pino.text
    assert "optionsOrStream" in pino.doc and "an options object" in pino.doc


def test_a_typed_let_in_code_is_no_declaration() -> None:
    source = "let count: number\nexport const limit: number\n\nexport function f() {}\n"
    assert [(c.symbol, c.kind) for c in chunk_text("src/count.ts", source)] == [
        ("<module>", "block"), ("limit", "interface"), ("f", "function")]
