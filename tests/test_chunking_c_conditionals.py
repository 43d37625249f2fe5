"""C files whose preprocessor conditionals or directives split a construct: the parser is
shown one branch, and every definition keeps a chunk of its own (``conditionals.py``)."""

from __future__ import annotations

from textwrap import dedent

from freshmark.core.chunking import chunk_text, file_imports

# jq's jv_print.c: an ``#ifdef`` opens ``} else {`` in one group and closes it in another.
SPLIT_BRACES_C = dedent(
    """\
    #include <stdio.h>

    static void dump_term(double d, const char *literal) {
      switch (kind_of(d)) {
      case KIND_NUMBER: {
        if (d != d) {
          puts("null");
        } else {
    #ifdef USE_DECNUM
          if (literal) {
            puts(literal);
          } else {
    #endif
            printf("%g", d);
          }
    #ifdef USE_DECNUM
        }
    #endif
        break;
      }
      default:
        puts("null");
      }
    }

    void dump(double d) {
      dump_term(d, NULL);
    }

    void show(double d) {
      dump_term(d, "1.0");
    }
    """
)

# jq's jv_dtoa.c: K&R and ANSI parameter lists between the name and the body.
KR_PARAMETERS_C = dedent(
    """\
    #include "dtoa.h"

    static int
    quorem
    #ifdef KR_headers
    \t(b, s) int b; int s;
    #else
    \t(int b, int s)
    #endif
    {
    \treturn b / s;
    }

    double
    ulp
    #ifdef KR_headers
    \t(x) double x;
    #else
    \t(double x)
    #endif
    {
    \treturn x / 2;
    }
    """
)

# jq's builtin.c: an ``#include`` and a ``#define`` inside an array's initializer.
DIRECTIVES_IN_INITIALIZER_C = dedent(
    """\
    static const struct cfunction function_list[] = {
    #include "libm.h"
    #define BINOP(name) CFUNC(f_ ## name, "_" #name, 3),
    };

    static block gen_last(void) {
      block init = BLOCK(gen_op_simple(DUP),
                   BLOCK(gen_op_bound(LOADVN, is_empty_var),
                         gen_op_bound(LOADVN, last_var)));
      {
        struct bytecoded_builtin builtin_defs[] = {
        };
        block range = BLOCK(gen_op_simple(DUP),
                            gen_op_bound(RANGE, rangevar));
      }
      return init;
    }

    static block bind_builtins(block builtins) {
      return builtins;
    }
    """
)


def _functions(text: str) -> dict[str, tuple[int, int]]:
    return {c.symbol: (c.start_line, c.end_line) for c in chunk_text("x.c", text)
            if c.kind == "function"}


def test_an_ifdef_splitting_a_functions_braces_leaves_the_functions_after_it_their_own():
    assert _functions(SPLIT_BRACES_C) == {
        "dump_term": (3, 24), "dump": (26, 28), "show": (30, 32)}


def test_kr_and_ansi_parameter_lists_under_ifdef_else_leave_each_function_a_chunk():
    chunks = chunk_text("x.c", KR_PARAMETERS_C)
    assert _functions(KR_PARAMETERS_C) == {"quorem": (3, 12), "ulp": (14, 23)}
    ulp = next(c for c in chunks if c.symbol == "ulp")
    assert "(x) double x;" in ulp.text  # the text is the file's, both branches


def test_directives_inside_an_initializer_leave_the_functions_after_it_their_own():
    assert _functions(DIRECTIVES_IN_INITIALIZER_C) == {
        "gen_last": (6, 17), "bind_builtins": (19, 21)}


def test_the_includes_of_a_branch_the_reparse_leaves_out_still_are_imports():
    # after the split function, the group lies in the text the parse as written fails on
    text = SPLIT_BRACES_C.replace("void show", dedent(
        """\
        #ifdef HAVE_ALLOCA_H
        #include <alloca.h>
        #else
        #include <malloc.h>
        #endif
        void show"""))
    assert "show" in _functions(text)
    assert file_imports("x.c", text) == ["stdio.h", "alloca.h", "malloc.h"]


def test_a_conditional_between_definitions_keeps_both_branches_units_in_a_failing_file():
    alternatives = dedent(
        """\
        #ifdef HAVE_LIBONIG
        static int f_match(int x) {
          return onig_match(x);
        }
        #else
        static int f_match(int x) {
          return 0;
        }
        #endif

        """
    )
    chunks = chunk_text("x.c", alternatives + SPLIT_BRACES_C)
    assert [(c.start_line, c.end_line) for c in chunks if c.symbol == "f_match"] == [
        (2, 4), (6, 8)]
