"""JavaScript callers in the context graph: a member call is read by its receiver."""

from __future__ import annotations

import pytest
from search_fixtures import callers_in_slice, indexed_project

LOGGER = {
    "lib/tools.js": """'use strict'

function asString (str) {
  return JSON.stringify(str)
}

function stringify (obj, fallback) {
  try {
    return JSON.stringify(obj)
  } catch (_) {
    return fallback(obj)
  }
}

module.exports = { asString, stringify }
""",
    "lib/levels.js": """'use strict'

const { stringify } = require('./tools')

function genLsCache (labels) {
  const cache = {}
  for (const label in labels) {
    cache[label] = JSON.stringify(labels[label]).slice(0, -1)
  }
  return cache
}

function levelLine (level) {
  return stringify({ level })
}

function dump (serializer, level) {
  return serializer.stringify(level)
}

module.exports = { genLsCache, levelLine, dump }
""",
    "lib/errors.js": """'use strict'

function LevelError (message) {
  this.message = message
}

LevelError.from = function from (level) {
  return new LevelError('unknown level ' + level)
}

module.exports = LevelError
""",
    "lib/check.js": """'use strict'

const LevelError = require('./errors')

function checkLevel (levels, level) {
  if (!(level in levels)) throw LevelError.from(level)
  return level
}

module.exports = checkLevel
""",
    "pino.js": """'use strict'

const tools = require('./lib/tools')

function pino (opts) {
  return { opts, line: tools.stringify(opts) }
}

module.exports = pino
module.exports.destination = function destination (dest) {
  return { dest }
}
""",
    "file.js": """'use strict'

const pino = require('./pino')

module.exports = function (opts) {
  return pino.destination(opts.dest)
}
""",
}


@pytest.fixture
def logger(fm_home, make_repo) -> str:
    return str(indexed_project(make_repo("pino"), LOGGER, package="lib").path)


def test_a_member_call_through_a_runtime_global_is_no_call_of_a_module_function(logger):
    # ``JSON.stringify``: the runtime's; through the module (``tools.stringify``) or bare it is
    # the function, through another value (``serializer.stringify``) its name alone matched.
    assert callers_in_slice(logger, "lib/tools.js stringify") == {
        "levelLine": "high", "pino": "high", "dump": "medium"}


def test_a_function_used_as_an_object_is_not_called(logger):
    # ``pino.destination(…)`` calls the property ``destination``, not ``pino``.
    assert callers_in_slice(logger, "pino") == {}


def test_a_static_member_of_a_capitalised_function_is_a_use_of_that_constructor(logger):
    # ``LevelError.from`` (``new LevelError(…)``), in the breathing room, is named by a line.
    assert callers_in_slice(logger, "LevelError") == {"checkLevel": "high",
                                                      "LevelError.from": "high"}
