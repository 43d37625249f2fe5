"""PHP callers in the context graph: a method call is read by what it is written through."""

from __future__ import annotations

import pytest
from search_fixtures import callers_in_slice, indexed_project


def _handler(name: str, base: str, body: str) -> str:
    return (f"<?php\n\nnamespace Monolog\\Handler;\n\nclass {name} extends {base}\n{{\n"
            f"{body}}}\n")


HANDLERS = {
    "src/AbstractProcessingHandler.php": "<?php\n\nnamespace Monolog\\Handler;\n\n"
    "abstract class AbstractProcessingHandler\n{\n    public function isHandling($record): bool\n"
    "    {\n        return true;\n    }\n}\n",
    "src/StreamHandler.php": _handler(
        "StreamHandler", "AbstractProcessingHandler",
        "    public function close(): void\n    {\n        fclose($this->stream);\n    }\n\n"
        "    protected function write($record): void\n    {\n"
        "        fwrite($this->stream, (string) $record);\n    }\n"),
    "src/SocketHandler.php": _handler(
        "SocketHandler", "AbstractProcessingHandler",
        "    public function close(): void\n    {\n        socket_close($this->resource);\n"
        "    }\n\n    protected function write($record): void\n    {\n"
        "        socket_write($this->resource, (string) $record);\n    }\n"),
    "src/RotatingFileHandler.php": _handler(
        "RotatingFileHandler", "StreamHandler",
        "    protected function write($record): void\n    {\n        if ($this->mustRotate) {\n"
        "            $this->close();\n        }\n\n        parent::write($record);\n    }\n"),
    "src/SlackHandler.php": _handler(
        "SlackHandler", "SocketHandler",
        "    protected function write($record): void\n    {\n        parent::write($record);\n"
        "    }\n"),
    "src/UdpSocket.php": "<?php\n\nnamespace Monolog\\Handler;\n\nclass UdpSocket\n{\n"
    "    public function write($line): void\n    {\n        socket_sendto($this->socket, $line);"
    "\n    }\n}\n",
    "src/SyslogUdpHandler.php": _handler(
        "SyslogUdpHandler", "AbstractProcessingHandler",
        "    protected UdpSocket $socket;\n\n    protected function write($record): void\n    {\n"
        "        $this->socket->write((string) $record);\n    }\n"),
}


@pytest.fixture
def monolog(fm_home, make_repo) -> str:
    return str(indexed_project(make_repo("monolog"), HANDLERS, package="src").path)


def test_a_php_parent_call_reaches_only_the_method_of_the_class_its_class_extends(monolog):
    assert callers_in_slice(monolog, "StreamHandler.write") == {
        "RotatingFileHandler.write": "high"}
    assert callers_in_slice(monolog, "SocketHandler.write") == {"SlackHandler.write": "high"}


def test_a_php_call_through_this_reaches_its_own_class_or_a_base(monolog):
    assert callers_in_slice(monolog, "StreamHandler.close") == {
        "RotatingFileHandler.write": "high"}
    assert "RotatingFileHandler.write" not in callers_in_slice(monolog, "SocketHandler.close")


def test_a_php_call_through_a_member_reaches_the_class_the_member_is_declared(monolog):
    assert callers_in_slice(monolog, "UdpSocket.write") == {"SyslogUdpHandler.write": "high"}


COUNTABLE = {
    "src/CookieJar.php": "<?php\n\nnamespace GuzzleHttp\\Cookie;\n\n"
    "class CookieJar implements \\Countable\n{\n    public function count(): int\n    {\n"
    "        return \\count($this->cookies);\n    }\n}\n",
    "src/Client.php": "<?php\n\nnamespace GuzzleHttp;\n\nclass Client\n{\n"
    "    public function __call($method, $args)\n    {\n        if (\\count($args) < 1) {\n"
    "            throw new \\InvalidArgumentException('no URI');\n        }\n"
    "        return $this->request($method, $args[0]);\n    }\n}\n",
}


def test_a_php_function_called_after_a_namespace_is_no_call_of_a_method(fm_home, make_repo):
    repo = indexed_project(make_repo("guzzle"), COUNTABLE, package="src")
    assert "Client.__call" not in callers_in_slice(str(repo.path), "CookieJar.count")


FUNCTIONS = {
    "src/functions.php": "<?php\n\nnamespace GuzzleHttp;\n\n"
    "function json_decode(string $json, bool $assoc = false)\n{\n"
    "    return Utils::jsonDecode($json, $assoc);\n}\n",
    "src/helpers.php": "<?php\n\nfunction tap_value($value)\n{\n    return $value;\n}\n",
    "src/Utils.php": "<?php\n\nnamespace GuzzleHttp;\n\nfinal class Utils\n{\n"
    "    /**\n     * Wrapper for json_decode that throws when an error occurs.\n     */\n"
    "    public static function jsonDecode(string $json, bool $assoc = false)\n    {\n"
    "        $data = \\json_decode($json, $assoc);\n"
    "        if (\\JSON_ERROR_NONE !== \\json_last_error()) {\n"
    "            throw new \\InvalidArgumentException('json_decode error: '.$json);\n"
    "        }\n\n        return \\tap_value($data);\n    }\n}\n",
    "src/Cookie/SessionCookieJar.php": "<?php\n\nnamespace GuzzleHttp\\Cookie;\n\n"
    "class SessionCookieJar\n{\n    protected function load(): array\n    {\n"
    "        return \\json_decode($_SESSION['cookies'], true);\n    }\n}\n",
}


@pytest.fixture
def guzzle_functions(fm_home, make_repo) -> str:
    return str(indexed_project(make_repo("guzzle"), FUNCTIONS, package="src").path)


def test_a_php_call_written_to_the_global_namespace_is_no_call_of_a_namespaced_function(
        guzzle_functions):
    assert callers_in_slice(guzzle_functions, "json_decode") == {}


def test_a_php_call_written_to_the_global_namespace_reaches_a_global_function_of_the_project(
        guzzle_functions):
    assert "Utils.jsonDecode" in callers_in_slice(guzzle_functions, "tap_value")


STACK = {
    "src/HandlerStack.php": "<?php\n\nnamespace GuzzleHttp;\n\nclass HandlerStack\n{\n"
    "    public static function create(): self\n    {\n        return new self();\n    }\n\n"
    "    public function __invoke($request)\n    {\n        $handler = $this->resolve();\n"
    "        return $handler($request);\n    }\n\n"
    "    public function resolve(): callable\n    {\n        return $this->handler;\n    }\n}\n",
    "src/Client.php": "<?php\n\nnamespace GuzzleHttp;\n\nclass Client\n{\n"
    "    private function buildUri($uri, array $config)\n    {\n"
    "        return Psr7\\UriResolver::resolve(Psr7\\Utils::uriFor($config['base']), $uri);\n"
    "    }\n}\n",
    "src/Handler/CurlMultiHandler.php": "<?php\n\nnamespace GuzzleHttp\\Handler;\n\n"
    "class CurlMultiHandler\n{\n    private function processMessages(): void\n    {\n"
    "        $entry = $this->handles[0];\n        $entry['deferred']->resolve($entry['easy']);\n"
    "    }\n}\n",
    "src/Pool.php": "<?php\n\nnamespace GuzzleHttp;\n\nuse GuzzleHttp\\HandlerStack as Stack;\n\n"
    "class Pool\n{\n    public function stack()\n    {\n        return Stack::create();\n"
    "    }\n}\n",
}


@pytest.fixture
def guzzle_stack(fm_home, make_repo) -> str:
    return str(indexed_project(make_repo("guzzle"), STACK, package="src").path)


def test_a_php_static_call_on_a_class_the_project_does_not_define_reaches_none_of_its_methods(
        guzzle_stack):
    assert set(callers_in_slice(guzzle_stack, "HandlerStack.resolve")) == {
        "HandlerStack.__invoke", "CurlMultiHandler.processMessages"}


def test_a_php_static_call_through_a_use_alias_reaches_the_class_it_renames(guzzle_stack):
    assert callers_in_slice(guzzle_stack, "HandlerStack.create") == {"Pool.stack": "high"}
