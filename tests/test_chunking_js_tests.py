"""JavaScript and TypeScript tests (node:test, tap, Mocha, Jest): a ``test``/``it`` call is a
test named by its title, a ``describe`` a suite of them, as GoogleTest's ``suite.name``."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text
from freshmark.core.chunking.model import Chunk

BASIC_TEST_JS = dedent(
    """\
    'use strict'
    const test = require('node:test')

    test('pino version is exposed on export', () => {
      assert.equal(pino.version, version)
    })

    test('child instance exposes pino version', async (t) => {
      const child = pino().child({ foo: 'bar' })
      assert.equal(child.version, version)
    })
    """
)
HOOKS_TEST_JS = dedent(
    """\
    const { describe, test } = require('node:test')

    describe('log method hook', () => {
      const stream = sink()

      test('gets invoked', async t => {
        pino({ hooks: {} }, stream).info('a')
      })

      it.only('fatal method invokes hook', function () {
        pino({}, stream).fatal('a')
      })
    })
    """
)


def spans(chunks: list[Chunk]) -> list[tuple[str, str, int, int]]:
    return [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks]


def test_a_test_call_is_a_test_named_by_its_title() -> None:
    assert spans(chunk_text("test/basic.test.js", BASIC_TEST_JS)) == [
        ("<module>", "block", 1, 2),
        ("pino version is exposed on export", "function", 4, 6),
        ("child instance exposes pino version", "function", 8, 11),
    ]


def test_a_describe_is_a_suite_whose_tests_are_named_suite_dot_title() -> None:
    assert spans(chunk_text("test/hooks.test.js", HOOKS_TEST_JS)) == [
        ("<module>", "block", 1, 1),
        ("log method hook", "module", 3, 13),
        ("<module>#2", "block", 4, 4),
        ("log method hook.gets invoked", "function", 6, 8),
        ("log method hook.fatal method invokes hook", "function", 10, 12),
    ]


def test_runner_modifiers_options_and_tap_make_tests_too() -> None:
    source = ("test.skip('skipped for now', { skip: true }, (t) => {\n  t.pass()\n})\n"
              "tap.test('a tap test', (t) => {\n  t.end()\n})\n")
    assert [(c.symbol, c.kind) for c in chunk_text("test/tap.test.ts", source)] == [
        ("skipped for now", "function"), ("a tap test", "function")]


def test_a_titled_callback_that_is_no_test_stays_module_code() -> None:
    source = ("app.get('/users', function (req, res) {\n  res.end()\n})\n"
              "test(name, () => {\n  run()\n})\n")
    assert [(c.symbol, c.kind) for c in chunk_text("test/routes.test.js", source)] == [
        ("<module>", "block")]
