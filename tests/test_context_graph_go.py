"""Go callers in the context graph: read from the form of each call in a small router project."""

from __future__ import annotations

import pytest
from search_fixtures import callers_in_slice, indexed_project

ROUTER = {
    "chi.go": '''package chi

import "net/http"

// Middlewares is a slice of standard middleware handlers.
type Middlewares []func(http.Handler) http.Handler

// notFound answers a request no route matches.
func notFound(w http.ResponseWriter, r *http.Request) {
\tw.WriteHeader(404)
}
''',
    "chain.go": '''package chi

import "net/http"

// Chain returns a Middlewares type from a slice of middleware handlers.
func Chain(middlewares ...func(http.Handler) http.Handler) Middlewares {
\treturn Middlewares(middlewares)
}

// Handler builds a http.Handler from the chain of middlewares.
func (mws Middlewares) Handler(h http.Handler) http.Handler {
\tfor i := len(mws) - 1; i >= 0; i-- {
\t\th = mws[i](h)
\t}
\treturn h
}
''',
    "mux.go": '''package chi

import "net/http"

// Mux is a router of requests to handlers.
type Mux struct {
\thandler     http.Handler
\tmiddlewares Middlewares
\tnotFound    http.HandlerFunc
}

// With adds inline middlewares for an endpoint handler.
func (mx *Mux) With(middlewares ...func(http.Handler) http.Handler) *Mux {
\tvar mws Middlewares
\tmws = append(mws, middlewares...)
\treturn &Mux{middlewares: mws, notFound: mx.notFound}
}

// Use appends middlewares onto the mux's stack.
func (mx *Mux) Use(middlewares ...func(http.Handler) http.Handler) Middlewares {
\treturn append(mx.middlewares, middlewares...)
}

// handle registers a handler for a pattern behind the inline middlewares.
func (mx *Mux) handle(pattern string, handler http.Handler) http.Handler {
\tvar h http.Handler
\tmx.handler = http.HandlerFunc(mx.routeHTTP)
\th = Chain(mx.middlewares...).Handler(handler)
\treturn h
}

// routeHTTP routes a request through the routing tree.
func (mx *Mux) routeHTTP(w http.ResponseWriter, r *http.Request) {
\trctx := &Context{RoutePath: r.URL.Path}
\tif rctx.RoutePath != "" {
\t\tmx.handler.ServeHTTP(w, r)
\t}
}

// Get routes GET requests for pattern to handler.
func (mx *Mux) Get(pattern string, handler http.Handler) {
\tmx.handle(pattern, handler)
}
''',
    "context.go": '''package chi

// Context is the routing state of a request.
type Context struct {
\tRoutePath string
}

// Path is the routing path of the request.
func (x *Context) Path() string {
\treturn x.RoutePath
}

// Reset clears the context for reuse.
func (x *Context) Reset() {
\tx.RoutePath = ""
}
''',
    # Another package of the module: one of its files imports the router, the other not.
    "middleware/compress.go": '''package middleware

import (
\t"io"
\t"net/http"
)

// Compressor picks an encoder for each response.
type Compressor struct {
\tencoder io.Writer
}

// selectEncoder resets the encoder the request accepts onto w.
func (c *Compressor) selectEncoder(h http.Header, w io.Writer) io.Writer {
\tif h.Get("Accept-Encoding") != "" {
\t\tc.encoder.Reset(w)
\t}
\treturn c.encoder
}
''',
    "middleware/profiler.go": '''package middleware

import (
\t"net/http"

\t"github.com/go-chi/chi/v5"
)

// Profiler mounts the profiling handler.
func Profiler(index http.Handler) *chi.Mux {
\tr := &chi.Mux{}
\tr.Get("/", index)
\treturn r
}
''',
}


@pytest.fixture
def router(fm_home, make_repo) -> str:
    return str(indexed_project(make_repo("chi"), ROUTER, package="chi").path)


def test_a_type_a_go_signature_or_declaration_names_is_no_call_of_a_method_of_that_name(router):
    # ``http.Handler`` in Chain's parameters, a Mux field, ``var h http.Handler``: types.
    assert callers_in_slice(router, "Middlewares.Handler") == {"Mux.handle": "medium"}


def test_a_go_signature_naming_a_type_makes_its_code_a_user_of_the_type(router):
    assert callers_in_slice(router, "chi.go Middlewares")["Mux.Use"] == "high"


def test_a_go_file_that_does_not_import_a_package_calls_no_method_of_its_types(router):
    # compress.go's ``h.Get`` and ``c.encoder.Reset`` are http.Header's and a writer's.
    assert callers_in_slice(router, "Mux.Get") == {"Profiler": "medium"}
    assert callers_in_slice(router, "Context.Reset") == {}


def test_a_go_method_passed_as_a_value_has_its_passer_as_a_caller(router):
    # ``http.HandlerFunc(mx.routeHTTP)``: not called there, handed on to be called.
    assert callers_in_slice(router, "Mux.routeHTTP") == {"Mux.handle": "high"}


def test_a_go_selector_read_through_another_value_is_a_name_match_of_a_method(router):
    # ``r.URL.Path``: a field of the request's URL as likely as a Context's method value.
    assert callers_in_slice(router, "Context.Path") == {"Mux.routeHTTP": "medium"}


def test_a_go_literals_key_is_no_use_of_a_function_of_that_name(router):
    # ``&Mux{notFound: mx.notFound}`` sets the field from the field.
    assert callers_in_slice(router, "chi.go notFound") == {}
