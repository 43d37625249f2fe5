"""How a call is written tells whose it is (``core.call_forms``, pure)."""

from __future__ import annotations

from freshmark.core.call_forms import (
    bound_from_own_object,
    calls_only_through_own_receiver,
    calls_through_own_receiver,
    go_call_reaches,
    go_package_names,
    named_after,
    own_methods_binding,
    python_base_names,
    python_receivers,
    ruby_bound_to,
    ruby_call_receivers,
    rust_aliases,
    rust_call_paths,
    types_binding,
    used_on_own_object,
    used_through_a_value_of,
)
from freshmark.core.php_calls import (
    php_base_name,
    php_call_receivers,
    php_member_types,
    php_namespace_at,
)


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


def test_a_method_is_the_named_class_s_only_on_the_class_or_a_value_bound_to_it():
    assert used_through_a_value_of("tqdm.write(line)", "write", "tqdm")
    assert used_through_a_value_of("ws = WebSocket(scope)\nws.receive()", "receive", "WebSocket")
    assert used_through_a_value_of("def f(req: Request):\n    req.receive()", "receive", "Request")
    assert used_through_a_value_of("with Lock() as lock:\n    lock.acquire()", "acquire", "Lock")
    assert used_through_a_value_of("assert isinstance(ws, WebSocket)\nws.close()", "close",
                                   "WebSocket")
    # its own attribute handed on beside the class, a module's object, a value bound elsewhere
    assert not used_through_a_value_of("Request(scope, receive=self.receive)", "receive",
                                       "Request")
    assert not used_through_a_value_of("bar = tqdm(x)\nsys.stdout.write(s)", "write", "tqdm")
    assert used_through_a_value_of("Request(scope).receive()", "receive", "Request")
    assert used_through_a_value_of("self.io = DiscordIO(token)", "__init__", "DiscordIO")
    assert not used_through_a_value_of("tqdm(x)\ngetattr(fp, 'buffer').write(s)", "write", "tqdm")
    assert not used_through_a_value_of("stream = open_stream()\nstream.receive()\nRequest",
                                       "receive", "Request")


def test_a_python_method_s_own_object_is_its_first_parameter_and_its_aliases():
    assert python_receivers("    def info(__self, message):\n        __self._log(message)") == \
        {"__self"}
    assert python_receivers("    def catch(\n        self,\n    ):\n        logger = self\n") == \
        {"self", "logger"}
    assert python_receivers("    @classmethod\n    def make(cls):\n        return cls()") == {"cls"}


def test_a_static_method_or_a_long_method_s_later_part_has_no_own_object():
    assert python_receivers("    @staticmethod\n    def strip(tokens):\n        pass") == set()
    later_part = ("        class Catcher:\n            def __init__(self, x):\n"
                  "                pass\n        return Catcher(x)")
    assert python_receivers(later_part) == set()


def test_a_python_call_through_its_first_parameter_is_through_its_own_receiver():
    code = '__self._log("INFO", message)'
    assert calls_through_own_receiver(code, "_log", {"__self"})
    assert not calls_through_own_receiver(code, "_log")
    assert calls_only_through_own_receiver(code, "_log", {"__self"})
    assert not calls_through_own_receiver("handler.__self._log()", "_log", {"__self"})


def test_a_value_a_method_of_its_own_object_returns_may_be_of_its_own_class():
    assert bound_from_own_object("new = self.mutablecopy()\nnew.update(other)", "new", {"self"})
    assert not bound_from_own_object("handler = self.handlers.pop(i)\nhandler.stop()",
                                     "handler", {"self"})


def test_a_python_value_is_bound_to_the_classes_its_own_binding_names():
    code = ("def render(self, request: Request, field: DataField | FileField = None):\n"
            "    decoder = TextDecoder(encoding=request.encoding)\n"
            "    content = self._get_content_decoder()\n"
            "    with Lock() as lock:\n")
    assert types_binding(code, "field") == {"DataField", "FileField"}
    assert types_binding(code, "decoder") == {"TextDecoder"}
    assert types_binding(code, "lock") == {"Lock"}
    assert types_binding("for key, value in self._list:", "key") == set()
    assert own_methods_binding(code, "content", {"self"}) == {"_get_content_decoder"}


def test_a_python_class_s_bases_are_named_without_their_modules_parameters_or_keywords():
    assert python_base_names("class GZipDecoder(ContentDecoder)", "GZipDecoder") == [
        "ContentDecoder"]
    assert python_base_names("class Map(typing.Generic[K, V], abc.Mapping, metaclass=Meta)",
                             "Map") == ["Generic", "Mapping"]
    assert python_base_names("class Plain", "Plain") == []


def test_a_value_is_named_after_its_class_by_its_name_or_last_word():
    assert named_after("headers", "Headers")
    assert named_after("field", "DataField")
    assert named_after("_transport", "HTTPTransport")
    assert named_after("content_decoder", "GZipDecoder")
    assert not named_after("netloc", "GZipDecoder")
    assert not named_after("response", "ResponseStream")


def test_a_swift_member_read_through_another_value_is_not_the_own_method():
    code = "func arguments(for key: InputKey) -> [ArgumentDefinition] {\n" \
           "  arguments.filter { $0.help.keys.contains(key) }\n}"
    assert not used_on_own_object(code, "help", "ErrorMessageGenerator")
    assert used_on_own_object("guard let abstract = help(for: key)?.abstract", "help",
                              "ErrorMessageGenerator")
    assert used_on_own_object("self.sections = HelpGenerator.generateSections(for: c)",
                              "generateSections", "HelpGenerator")  # a static member
    assert not used_on_own_object("return parser!.parse(split)", "parse", "CommandParser")


def test_a_php_call_is_named_by_what_it_is_written_through():
    code = ("parent::write($r); $this->write($r); self::write($r); static::write($r);\n"
            "$this->socket->write($r); $this?->socket?->write($r); $h->write($r);\n"
            "\\Monolog\\Utils::write($r); write($r);")
    assert php_call_receivers(code, "write") == {
        "parent", "$this", "$this->socket", "->", "Utils", ""}


def test_a_php_use_without_a_call_is_told_apart_and_its_own_head_is_no_use():
    code = "protected function write($r): void\n{\n    $f = [$this, 'write'];\n}\n"
    assert php_call_receivers(code, "write") == {"?"}


def test_a_php_member_has_the_class_it_is_declared_or_made_with():
    assert php_member_types("protected UdpSocket $socket;", "socket") == {"UdpSocket"}
    assert php_member_types("public function __construct(private readonly ?\\Foo\\Bar $bar)",
                            "bar") == {"Bar"}
    assert php_member_types("$this->socket = new UdpSocket($host);", "socket") == {"UdpSocket"}
    assert php_member_types("protected Closure|HandlerInterface $handler;", "handler") == set()


def test_a_php_class_extends_the_class_its_signature_names():
    assert php_base_name("abstract class A extends \\Monolog\\StreamHandler implements B") == \
        "StreamHandler"
    assert php_base_name("final class A implements B") is None


NEW = """    /// [`Record::builder()`]
    pub fn new() -> RecordBuilder<'a> {
        RecordBuilder { record: Record { metadata: Metadata::builder().build() } }
    }
"""


def test_a_rust_call_on_a_type_is_read_with_its_type_not_its_comment():
    assert rust_call_paths(NEW, "builder") == {"Metadata"}


def test_a_rust_use_is_read_by_what_it_is_written_after():
    code = ("fn builder(&self) { Self::builder(); self.builder(); b.builder(); builder(); "
            "Vec::<u8>::builder(); <T as fmt::Display>::builder(x) }")
    assert rust_call_paths(code, "builder") == {"Self", "self.", ".", "", "Vec", "Display"}


def test_a_rust_alias_names_the_item_it_imports():
    assert rust_aliases(["value_bag::ValueBag as Inner", "crate::{Record as R, Level}"]) == {
        "Inner": "ValueBag", "R": "Record"}


def test_a_php_function_call_written_with_a_namespace_is_named_by_that_namespace():
    code = "if (\\count($args) < 1) {\n    \\GuzzleHttp\\count($a) + Psr7\\count($b);\n}\n"
    assert php_call_receivers(code, "count") == {"\\", "\\GuzzleHttp\\", "Psr7\\"}


def test_a_php_name_in_a_comment_or_a_message_is_no_use_but_a_callable_string_is():
    code = ("// json_decode it\n$data = \\json_decode($json); /* json_decode */\n"
            "throw new E('json_decode error: ' . $json);\n")
    assert php_call_receivers(code, "json_decode") == {"\\"}
    assert php_call_receivers("array_map('json_decode', $all);", "json_decode") == {"?"}


def test_a_php_file_declares_the_namespace_of_the_lines_after_it():
    text = "<?php\n\nnamespace GuzzleHttp;\n\nfunction json_decode() {}\n"
    assert php_namespace_at(text, 5) == "GuzzleHttp"
    assert php_namespace_at("<?php\n\nfunction tap_value() {}\n", 3) == ""
    braced = "<?php\nnamespace A\\B {\n}\nnamespace {\n    function x() {}\n}\n"
    assert (php_namespace_at(braced, 2), php_namespace_at(braced, 5)) == ("A\\B", "")


def test_a_php_static_call_on_a_class_a_value_holds_is_through_another_value():
    code = "$class::create($a);\n$this->factory::create();\n"
    assert php_call_receivers(code, "create") == {"->"}
def test_a_ruby_call_is_read_by_what_it_is_written_through():
    code = """def media_type_params
  # params of the header
  MediaType.params(content_type) || Rack::Utils::params(x) || self.params
  req.params; Parser.new(io).params; new(io).params; self.class.params; foo(1).params
  params(:params, params: 1)
end"""
    assert ruby_call_receivers(code, "params") == {
        "MediaType", "Utils", "self", "req", "Parser.new", ".new", "self.class", ".", ""}
    assert ruby_call_receivers("def self.params(x)\n  x\nend", "params") == set()
    assert ruby_call_receivers("valid?(path) ? path : nil", "valid?") == {""}


def test_a_ruby_variable_is_of_the_class_named_where_it_is_bound():
    code = "auth = Basic::Request.new(env)\nauth.basic?"
    assert ruby_bound_to(code, "auth", "Request")
    assert not ruby_bound_to(code, "auth", "Basic2")
    assert ruby_bound_to("builder = self.new(**options)", "builder", "Builder", own=True)
    assert not ruby_bound_to("builder = self.new(**options)", "builder", "Builder")
