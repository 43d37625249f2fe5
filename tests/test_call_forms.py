"""How a call is written tells whose it is (``core.call_forms``, pure)."""

from __future__ import annotations

from freshmark.core.call_forms import calls_through_own_receiver


def test_a_call_on_its_own_receiver_is_through_it():
    assert calls_through_own_receiver("return $this->select(1);", "select")
    assert calls_through_own_receiver("return self.parse(text)", "parse")
    assert calls_through_own_receiver("handlers.append(self.parse)", "parse")  # passed on


def test_a_php_property_read_through_this_is_no_call_of_the_method():
    assert not calls_through_own_receiver("$iterator->select(...$this->select);", "select")
