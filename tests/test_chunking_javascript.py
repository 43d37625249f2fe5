"""JavaScript, TypeScript and TSX chunking: classes, arrow functions, exports, interfaces."""

from __future__ import annotations

from textwrap import dedent

import pytest

from freshmark.core.chunking import chunk_text
from freshmark.core.chunking.model import Chunk

CART_JS = dedent(
    """\
    import { formatPrice } from './money.js';
    const api = require('./api');

    /**
     * Shopping cart held in memory.
     */
    export class Cart extends Store {
      items = [];

      add(item) {
        this.items.push(item);
        api.track('add', item.id);
      }

      onClear = () => {
        this.items = [];
      };
    }

    // Sums the cart.
    export const total = (cart) => {
      return formatPrice(cart.items.reduce((sum, i) => sum + i.price, 0));
    };

    export default function render(cart) {
      return new CartView(cart);
    }

    module.exports.legacy = true;
    """
)

REPO_TS = dedent(
    """\
    import type { Order } from "./order";

    /** A stored order. */
    export interface OrderRecord extends Order {
      id: string;
      save(): Promise<void>;
    }

    export type OrderId = string;

    export enum Status {
      Open,
      Closed,
    }

    export namespace Orders {
      export function byId(id: OrderId): OrderRecord | undefined {
        return cache.get(id);
      }
    }

    export abstract class Repository<T> implements Store<T> {
      abstract find(id: string): T;

      protected log(message: string): void {
        Logger.info(message);
      }
    }
    """
)

BUTTON_TSX = dedent(
    """\
    import React from "react";

    type Props = { label: string };

    export const Button = ({ label }: Props) => {
      return <Icon name="ok">{label}</Icon>;
    };
    """
)


def by_symbol(chunks: list[Chunk]) -> dict[str, Chunk]:
    return {chunk.symbol: chunk for chunk in chunks}


def test_js_units_cover_class_members_arrow_constants_and_default_export() -> None:
    chunks = chunk_text("web/cart.js", CART_JS)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 2),
        ("Cart", "class", 4, 18),
        ("Cart.add", "method", 10, 13),
        ("Cart.onClear", "method", 15, 17),
        ("total", "function", 20, 23),
        ("render", "function", 25, 27),
        ("<module>#2", "block", 29, 29),
    ]


def test_js_jsdoc_and_line_comments_bind_to_the_exported_unit() -> None:
    chunks = by_symbol(chunk_text("cart.js", CART_JS))
    assert chunks["Cart"].doc == "Shopping cart held in memory."
    assert chunks["total"].doc == "Sums the cart."
    assert chunks["total"].text.startswith("// Sums the cart.\nexport const total")


def test_js_anonymous_default_export_is_named_default() -> None:
    (chunk,) = chunk_text("app.js", "export default function () {\n  return boot();\n}\n")
    assert (chunk.symbol, chunk.kind, chunk.references) == ("default", "function", ["boot"])


def test_js_signatures_leave_out_export_and_the_body() -> None:
    chunks = by_symbol(chunk_text("cart.js", CART_JS))
    assert chunks["Cart"].signature == "class Cart extends Store"
    assert chunks["total"].signature == "const total = (cart) =>"
    assert chunks["Cart.add"].signature == "add(item)"


def test_js_imports_include_require_and_references_include_calls_and_constructors() -> None:
    chunks = by_symbol(chunk_text("cart.js", CART_JS))
    assert chunks["Cart.add"].imports == ["./money.js", "./api"]
    assert chunks["Cart.add"].references == ["push", "api", "track"]
    assert chunks["render"].references == ["CartView"]
    assert chunks["Cart"].references == ["Store"]


def test_js_class_summary_elides_method_and_arrow_field_bodies() -> None:
    cart = by_symbol(chunk_text("cart.js", CART_JS))["Cart"]
    assert cart.text.splitlines()[3:] == [
        "export class Cart extends Store {",
        "  items = [];",
        "",
        "  add(item) {",
        "    ...",
        "  }",
        "",
        "  onClear = () => {",
        "    ...",
        "  };",
        "}",
    ]


def test_ts_interfaces_type_aliases_enums_namespaces_and_abstract_classes() -> None:
    chunks = chunk_text("src/repo.ts", REPO_TS)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 1),
        ("OrderRecord", "interface", 3, 7),
        ("OrderId", "interface", 9, 9),
        ("Status", "enum", 11, 14),
        ("Orders", "module", 16, 20),
        ("Orders.byId", "function", 17, 19),
        ("Repository", "class", 22, 28),
        ("Repository.log", "method", 25, 27),
    ]


def test_ts_interface_keeps_its_member_signatures_and_doc() -> None:
    record = by_symbol(chunk_text("repo.ts", REPO_TS))["OrderRecord"]
    assert record.text == dedent(
        """\
        /** A stored order. */
        export interface OrderRecord extends Order {
          id: string;
          save(): Promise<void>;
        }"""
    )
    assert (record.signature, record.doc) == (
        "interface OrderRecord extends Order",
        "A stored order.",
    )
    assert record.references == ["Order", "Promise"]


def test_ts_abstract_class_lists_abstract_member_and_references_type_names() -> None:
    chunks = by_symbol(chunk_text("repo.ts", REPO_TS))
    assert "  abstract find(id: string): T;" in chunks["Repository"].text.splitlines()
    assert chunks["Repository"].signature == "abstract class Repository<T> implements Store<T>"
    assert chunks["Repository.log"].references == ["Logger", "info"]
    assert chunks["Orders.byId"].references == ["OrderId", "OrderRecord", "cache", "get"]


def test_tsx_component_is_a_function_referencing_its_jsx_components() -> None:
    chunks = chunk_text("ui/Button.tsx", BUTTON_TSX)
    assert [(c.symbol, c.kind) for c in chunks] == [
        ("<module>", "block"),
        ("Props", "interface"),
        ("Button", "function"),
    ]
    button = chunks[-1]
    assert button.references == ["Props", "Icon"]
    assert button.imports == ["react"]


def test_commonjs_prototype_and_exports_assignments_are_units() -> None:
    source = dedent(
        """\
        /** Adds an item. */
        Cart.prototype.add = function (item) {
          this.items.push(item);
        };

        exports.total = (cart) => sum(cart.items);

        setup();
        """
    )
    chunks = chunk_text("lib/cart.js", source)
    assert [(c.symbol, c.kind, c.start_line, c.end_line, c.doc) for c in chunks] == [
        ("Cart.add", "method", 1, 4, "Adds an item."),
        ("total", "function", 6, 6, ""),
        ("<module>", "block", 8, 8, ""),
    ]
    assert chunks[1].references == ["sum"]


GETTERS_JS = dedent(
    """\
    /**
     * The protocol, "http" or "https".
     *
     * @public
     */
    defineGetter(req, 'protocol', function protocol(){
      return this.socket.encrypted ? 'https' : 'http';
    });

    defineGetter(this, 'fresh', () => {
      return isFresh(this.headers);
    });

    app.use(function logger(req, res, next) {
      next();
    });

    describe('app', function () {
      it('works', function () {});
    });

    app.get('/', function (req, res) {
      res.send('hi');
    });
    """
)


def test_js_function_passed_with_an_object_and_a_property_name_is_a_unit_of_that_name() -> None:
    chunks = by_symbol(chunk_text("lib/request.js", GETTERS_JS))
    protocol = chunks["req.protocol"]
    assert (protocol.kind, protocol.start_line, protocol.end_line) == ("function", 1, 8)
    assert protocol.doc == 'The protocol, "http" or "https".\n\n@public'
    assert protocol.signature == "defineGetter(req, 'protocol', function protocol()"
    assert chunks["fresh"].references == ["defineGetter", "isFresh", "headers"]


def test_js_named_function_passed_to_a_call_is_a_unit_of_its_own_name() -> None:
    logger = by_symbol(chunk_text("app.js", GETTERS_JS))["logger"]
    assert (logger.kind, logger.start_line, logger.end_line) == ("function", 14, 16)


def test_js_anonymous_function_after_a_plain_string_stays_module_code() -> None:
    chunks = chunk_text("test/app.js", GETTERS_JS)
    assert [(c.symbol, c.kind) for c in chunks] == [
        ("req.protocol", "function"),
        ("fresh", "function"),
        ("logger", "function"),
        ("<module>", "block"),
    ]
    assert (chunks[-1].start_line, chunks[-1].end_line) == (18, 24)


def test_js_call_given_two_functions_names_none_of_them() -> None:
    source = "promise.then(function done() {\n  ok();\n}, function failed() {\n  no();\n});\n"
    (chunk,) = chunk_text("lib/p.js", source)
    assert (chunk.symbol, chunk.kind) == ("<module>", "block")


def test_js_chained_assignment_is_a_unit_named_by_its_first_target() -> None:
    source = "res.set =\nres.header = function header(field, val) {\n  return this;\n};\n"
    (chunk,) = chunk_text("lib/response.js", source)
    assert (chunk.symbol, chunk.kind, chunk.start_line, chunk.end_line) == (
        "res.set", "function", 1, 4
    )


def test_js_function_wrapped_in_a_call_argument_is_the_unit_of_that_property() -> None:
    source = "defineGetter(req, 'host', deprecate.function(function host(){\n  return 1;\n}));\n"
    (chunk,) = chunk_text("lib/request.js", source)
    assert (chunk.symbol, chunk.kind, chunk.start_line, chunk.end_line) == (
        "req.host", "function", 1, 3
    )


REQUEST_JS = dedent(
    """\
    const only = require('./only.js');

    module.exports = {
      /**
       * Request host.
       */
      get host () {
        return this.get('Host');
      },

      set host (value) {
        this.header.host = value;
      },

      maxIps: 0,

      get (field) {
        return this.req.headers[field];
      },

      parse: function (str) {
        return str.split('&');
      },

      'stringify': (obj) => only(obj),

      [Symbol.for('inspect')] () {
        return this.toJSON();
      }
    };
    """
)


def test_js_exported_object_of_functions_is_a_container_of_its_getters_setters_and_methods(
) -> None:
    chunks = chunk_text("lib/request.js", REQUEST_JS)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("<module>", "block", 1, 1),
        ("module.exports", "class", 3, 30),
        ("module.exports.host", "method", 4, 9),
        ("module.exports.host", "method", 11, 13),
        ("module.exports.get", "method", 17, 19),
        ("module.exports.parse", "method", 21, 23),
        ("module.exports.stringify", "method", 25, 25),
        ("module.exports.[Symbol.for('inspect')]", "method", 27, 29),
    ]


def test_js_object_outline_keeps_its_data_and_elides_member_bodies() -> None:
    outline = by_symbol(chunk_text("lib/request.js", REQUEST_JS))["module.exports"]
    assert "maxIps: 0" in outline.text
    assert "get host ()" in outline.text
    assert "this.get('Host')" not in outline.text


def test_js_object_assigned_through_a_variable_is_named_by_the_variable() -> None:
    source = "const proto = module.exports = {\n  onerror (err) {\n    throw err;\n  }\n};\n"
    symbols = [(c.symbol, c.kind) for c in chunk_text("lib/context.js", source)]
    assert symbols == [("proto", "class"), ("proto.onerror", "method")]


def test_js_object_of_data_alone_stays_module_code() -> None:
    source = "module.exports = {\n  port: 80,\n  hosts: ['a', 'b'],\n};\n"
    (chunk,) = chunk_text("lib/defaults.js", source)
    assert (chunk.symbol, chunk.kind) == ("<module>", "block")


def test_js_default_export_of_an_object_of_functions_is_the_container_default() -> None:
    source = ("export default {\n  getAdapter: (names) => {\n    return names[0];\n  },\n"
              "  adapters: known\n};\n")
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in
            chunk_text("lib/adapters.js", source)] == [
        ("default", "class", 1, 6), ("default.getAdapter", "method", 2, 4)]


def test_js_object_of_functions_inside_an_object_is_a_container_of_its_own() -> None:
    source = ("module.exports = {\n  methods: {\n    save () {\n      return 1;\n    }\n  },\n"
              "  props: { size: 1 }\n};\n")
    assert [(c.symbol, c.kind) for c in chunk_text("lib/component.js", source)] == [
        ("module.exports", "class"), ("module.exports.methods", "class"),
        ("module.exports.methods.save", "method")]


def test_js_object_passed_to_a_call_is_not_a_unit() -> None:
    (chunk,) = chunk_text("lib/app.js", "register({ handle () {\n  return 1;\n} });\n")
    assert (chunk.symbol, chunk.kind) == ("<module>", "block")


def test_js_guarded_default_export_of_a_function_is_the_function_default() -> None:
    source = ("const supported = typeof XMLHttpRequest !== 'undefined';\n\n"
              "export default supported && function (config) {\n  return send(config);\n};\n")
    chunks = chunk_text("lib/adapters/xhr.js", source)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks][-1] == (
        "default", "function", 3, 5)


def test_js_parenthesized_arrow_behind_a_guard_is_the_function_default() -> None:
    source = "export default supported && (async (config) => {\n  return fetch(config);\n});\n"
    (chunk,) = chunk_text("lib/adapters/fetch.js", source)
    assert (chunk.symbol, chunk.kind) == ("default", "function")


def test_js_guarded_default_export_without_a_function_stays_module_code() -> None:
    (chunk,) = chunk_text("lib/env.js", "export default hasBrowserEnv && window.navigator;\n")
    assert (chunk.symbol, chunk.kind) == ("<module>", "block")


def test_js_variable_holding_one_function_of_a_conditional_is_that_function() -> None:
    source = "const encode = ok ? function (str) {\n  return bytes(str);\n} : null;\n"
    (chunk,) = chunk_text("lib/encode.js", source)
    assert (chunk.symbol, chunk.kind) == ("encode", "function")


DEFAULTS_JS = dedent(
    """\
    const defaults = {
      adapter: ['xhr', 'http'],

      transformRequest: [function transformRequest(data, headers) {
        return JSON.stringify(data);
      }],

      hooks: [function a() {}, function b() {}]
    };
    """
)


def test_js_property_holding_an_array_of_one_function_is_a_member_named_by_its_key() -> None:
    chunks = chunk_text("lib/defaults/index.js", DEFAULTS_JS)
    assert [(c.symbol, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("defaults", "class", 1, 9), ("defaults.transformRequest", "method", 4, 6)]


def test_js_object_whose_only_function_has_a_computed_key_stays_module_code() -> None:
    source = "module.exports = {\n  [kind]: function () {\n    return 1;\n  }\n};\n"
    (chunk,) = chunk_text("lib/kinds.js", source)
    assert (chunk.symbol, chunk.kind) == ("<module>", "block")


OVERLOADS_TS = dedent(
    """\
    /** Freezes draftable objects. */
    export function freeze<T>(obj: T, deep?: boolean): T
    export function freeze<T>(obj: any, deep: boolean = false): T {
    \treturn obj
    }

    /** Get the underlying object */
    /*#__PURE__*/
    export function original<T>(value: Draft<T>): T
    export function original(value: Draft<any>): any {
    \treturn value
    }

    export function first(): void
    export function second(): void

    class Shelf {
      /** Put a book or a name on the shelf. */
      put(book: Book): void;
      put(name: string): void;
      put(item: any): void { this.items.push(item) }
    }
    """
)


def test_ts_overload_signatures_and_their_doc_belong_to_the_implementation() -> None:
    chunks = by_symbol(chunk_text("src/common.ts", OVERLOADS_TS))
    freeze, original, put = chunks["freeze"], chunks["original"], chunks["Shelf.put"]
    assert (freeze.start_line, freeze.end_line) == (1, 5)
    assert freeze.doc == "Freezes draftable objects."
    assert (original.start_line, original.end_line) == (7, 12)
    assert original.doc.startswith("Get the underlying object")
    assert (put.start_line, put.end_line) == (18, 21)
    assert "Put a book" in put.doc and "put(name: string): void;" in put.text


SPACED_OVERLOADS_TS = """\
export function useStore<S>(api: S): S

export function useStore<S, U>(api: S, selector: (state: S) => U): U

/** Reads the store. */
export function useStore(api: any, selector = identity) {
  return selector(api)
}
"""


def test_ts_overload_signatures_set_apart_by_blank_lines_belong_to_the_implementation(
) -> None:
    use_store = by_symbol(chunk_text("src/react.ts", SPACED_OVERLOADS_TS))["useStore"]
    assert (use_store.start_line, use_store.end_line) == (1, 8)
    assert use_store.doc == "Reads the store."


def test_ts_function_typed_by_as_or_satisfies_is_the_function() -> None:
    source = ("export const createStore = ((init) => init ? api(init) : api) as CreateStore\n"
              "const check = ((x: number) => x > 0) satisfies Check\n"
              "export const persist = persistImpl as unknown as Persist\n")
    chunks = by_symbol(chunk_text("src/vanilla.ts", source))
    assert chunks["createStore"].kind == chunks["check"].kind == "function"
    assert "persist" not in chunks  # an alias of a function is no function of its own


FACTORIES_TS = """\
export const $ZodString: core.$constructor<$ZodString> = /*@__PURE__*/ core.$constructor(
  "$ZodString",
  (inst, def) => {
    $ZodType.init(inst, def);
  }
);
export const router = express.Router();
export const both = pipe((a) => a, (b) => b);
"""


def test_ts_variable_made_by_a_call_given_one_function_is_that_function() -> None:
    chunks = by_symbol(chunk_text("core/schemas.ts", FACTORIES_TS))
    assert (chunks["$ZodString"].kind, chunks["$ZodString"].start_line,
            chunks["$ZodString"].end_line) == ("function", 1, 6)
    assert "router" not in chunks and "both" not in chunks  # no function, or two


OPTION_STORE_TS = """\
export const useUserStore = defineStore('user', {
  state: () => ({ name: 'Eduardo' }),
  actions: {
    logout() {
      this.$patch({ name: '' })
    },
  },
})
export const config = makeConfig({ port: 3000 })
"""


def test_ts_variable_made_by_a_call_given_an_object_of_functions_is_that_container() -> None:
    chunks = by_symbol(chunk_text("stores/user.ts", OPTION_STORE_TS))
    assert chunks["useUserStore"].kind == "class"
    assert chunks["useUserStore.actions.logout"].kind == "method"
    assert "config" not in chunks  # an object of data alone


def test_ts_signatures_of_different_names_stay_module_code() -> None:
    chunks = by_symbol(chunk_text("src/common.ts", OVERLOADS_TS))
    module = [c for c in chunks.values() if c.symbol.startswith("<module>")]
    assert [(c.start_line, c.end_line) for c in module] == [(14, 15)]


@pytest.mark.parametrize("path", ["source/Ky.ts", "source/Ky.js"])
def test_a_call_of_a_private_method_is_a_reference_named_with_its_hash(path: str) -> None:
    source = ("class Ky {\n  #delay() {\n    return 300;\n  }\n\n"
              "  #retryDelay() {\n    return this.#delay() + this.wait();\n  }\n}\n")
    assert by_symbol(chunk_text(path, source))["Ky.#retryDelay"].references == [
        "#delay", "wait"]


def test_a_block_doc_comment_set_apart_by_a_blank_line_is_its_functions_doc() -> None:
    source = dedent(
        """\
        /*!
         * shop
         * MIT Licensed
         */

        'use strict';

        /**
         * Refund the customer when the parcel never arrived.
         */

        exports.settle = function settle(order) {
          return order.total;
        };

        // Loose note about coupons.

        exports.coupon = function coupon(order) {
          return order.total;
        };
        """
    )
    chunks = {c.symbol: c for c in chunk_text("shop.js", source)}
    assert chunks["settle"].doc == "Refund the customer when the parcel never arrived."
    assert chunks["settle"].start_line == 8
    assert chunks["coupon"].doc == ""
    assert "MIT Licensed" not in chunks["settle"].text
