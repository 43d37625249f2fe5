"""Code-aware tokenizer rules (SPEC §6, seed 001 §3.1)."""

from __future__ import annotations

import pytest

from freshmark.core.tokenize import (
    MAX_TOKEN_CHARS,
    code_share,
    name_forms,
    name_parts,
    query_terms,
    tokenize,
    verb_bases,
)


def test_camel_case_is_split_and_kept_whole() -> None:
    assert tokenize("getUserById") == ["getuserbyid", "get", "user", "by", "id"]


def test_snake_case_is_kept_whole_and_split() -> None:
    tokens = tokenize("get_user_by_id")
    assert tokens[0] == "get_user_by_id"
    assert {"get", "user", "by", "id"} <= set(tokens)


def test_camel_and_snake_spellings_share_whole_and_parts() -> None:
    assert {"userid", "user", "id"} <= set(tokenize("user_id")) & set(tokenize("userId"))


def test_acronyms_and_digit_runs_are_pieces() -> None:
    assert tokenize("HTTPServerError2") == ["httpservererror2", "http", "server", "error", "2"]


def test_paths_are_tokenised_on_separators() -> None:
    tokens = tokenize("src/orders/order_service.py")
    assert {"src", "orders", "order_service", "order", "service", "py"} <= set(tokens)
    assert "/" not in "".join(tokens)


def test_dotted_names_are_split() -> None:
    assert {"orderservice", "cancel_order", "cancel", "order"} <= set(
        tokenize("OrderService.cancel_order")
    )


def test_tokens_are_lowercase() -> None:
    assert all(t == t.lower() for t in tokenize("ParseHTTPResponse XMLHttpRequest SQL"))


def test_numbers_are_kept() -> None:
    assert {"404", "sha256", "256", "3"} <= set(tokenize("status 404 sha256 retry(3)"))


def test_only_a_tiny_stoplist_is_dropped() -> None:
    tokens = tokenize("how to read the file for each line in a list")
    assert tokens == ["read", "file", "for", "each", "line", "in", "list"]


def test_dunder_names_keep_the_bare_name() -> None:
    assert tokenize("__init__") == ["__init__", "init"]


def test_overlong_words_are_dropped() -> None:
    blob = "A" * (MAX_TOKEN_CHARS + 1)
    assert tokenize(f"x = '{blob}'") == ["x"]


def test_non_ascii_identifiers_are_words() -> None:
    assert "größe" in tokenize("def größe(): pass")


def test_query_terms_are_distinct_in_first_seen_order() -> None:
    assert query_terms("order cancel order") == ["order", "cancel"]


def test_symbol_name_forms_cover_both_spellings() -> None:
    assert name_forms("OrderService.cancel_order") == {"cancel_order", "cancelorder"}
    assert name_parts("OrderService.cancel_order") == {"cancel", "order"}


def test_plural_tokens_also_give_their_singular() -> None:
    assert {"users", "user", "classes", "class", "entries", "entry"} <= set(
        tokenize("users classes entries")
    )
    assert "statu" not in tokenize("status") and "clas" not in tokenize("class")


def test_inflected_verbs_give_their_possible_base_forms() -> None:
    assert "parse" in verb_bases("parsed") and "parse" in verb_bases("parsing")
    assert "stop" in verb_bases("stopped") and "copy" in verb_bases("copied")
    assert verb_bases("string") == [] and verb_bases("users") == []


def test_code_share_counts_words_written_as_code() -> None:
    assert code_share("how do I split a list into chunks") == 0.0
    assert code_share("Router.Walk") == 1.0
    assert code_share("where is cancel_order called from getUser") == pytest.approx(2 / 6)
    assert code_share("python 3.8 version") == 0.0
    assert code_share("") == 0.0


def test_a_private_member_written_with_its_class_is_written_as_code() -> None:
    assert code_share("Ky.#retry") == 1.0
