"""How a call is written tells whose it is (``core.call_forms``, pure)."""

from __future__ import annotations

from freshmark.core.call_forms import calls_through_own_receiver, go_call_reaches, go_package_names


def test_a_call_on_its_own_receiver_is_through_it():
    assert calls_through_own_receiver("return $this->select(1);", "select")
    assert calls_through_own_receiver("return self.parse(text)", "parse")
    assert calls_through_own_receiver("handlers.append(self.parse)", "parse")  # passed on


def test_a_php_property_read_through_this_is_no_call_of_the_method():
    assert not calls_through_own_receiver("$iterator->select(...$this->select);", "select")


CHAIN = '''// Chain returns a Middlewares type from a slice of middleware handlers.
func Chain(middlewares ...func(http.Handler) http.Handler) Middlewares {
\treturn Middlewares(middlewares)
}
'''


def test_a_type_in_a_go_signature_is_no_call_of_a_method_of_that_name():
    assert go_call_reaches(CHAIN, "Handler", callee_owner="Middlewares",
                           caller_owner="") is False


def test_a_go_name_after_an_imported_package_is_no_call_of_a_method():
    code = "func serve() {\n\tvar h http.Handler\n\th = next\n\th.ServeHTTP(nil, nil)\n}\n"
    packages = go_package_names(["net/http", "github.com/go-chi/chi/v5"])
    assert packages == {"http", "chi"}
    assert go_call_reaches(code, "Handler", callee_owner="Middlewares", caller_owner="",
                           packages=packages) is False
