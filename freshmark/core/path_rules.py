"""The built-in path rules of file classification (SPEC §4; ``classify`` applies them): each
kind's globs, in precedence order, with the reason a file of a kind that is not indexed is
skipped. Data only, kept apart so the rules read as one table."""

from __future__ import annotations

SKIP_VENDORED = "vendored"
SKIP_BUILD_OUTPUT = "build-output"

_JS_EXTS = ("js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts")

# The files that list the paths a tool leaves out: the tool's configuration.
IGNORE_FILES = (".gitignore", ".dockerignore", ".npmignore", ".eslintignore", ".prettierignore")
# Well-known config file names, which come before the doc extensions (``requirements.txt``).
_NAMED_CONFIG = (
    "requirements*.txt", "constraints*.txt", "CMakeLists.txt", "Dockerfile", "Dockerfile.*",
    "*.dockerfile", "Containerfile", "Makefile", "GNUmakefile", "*.mk", "Procfile",
    "Jenkinsfile", "MANIFEST.in", "go.mod", *IGNORE_FILES, ".gitattributes", ".gitmodules",
    ".editorconfig", ".env", ".npmrc",
    "*.gradle", "*.gradle.kts",  # Gradle's build scripts: the build's configuration
    # Ruby's build and dependency files, as a Makefile and requirements.txt are (rack's).
    "Gemfile", "Rakefile", "*.gemspec",
)
# Documentation by its extension or name (``*.txt`` is doc too, but mostly data in tests).
_PROSE = (
    "*.md", "*.markdown", "*.mdx", "*.rst", "*.adoc", "*.asciidoc", "*.rdoc", "README",
    "LICENSE", "LICENCE", "COPYING", "NOTICE", "AUTHORS", "CONTRIBUTORS", "CONTRIBUTING",
)

# (kind, skip reason when not indexed, globs), in precedence order; see the module docstring.
BUILTIN_RULES: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
    ("vendored", SKIP_VENDORED, (
        "**/vendor/**", "**/third_party/**", "**/third-party/**", "**/thirdparty/**",
        "**/node_modules/**", "**/bower_components/**", "**/.venv/**", "**/site-packages/**",
        # Copies of other projects kept inside this one (pip's ``_vendor/``, spdlog's
        # ``fmt/bundled/``: 58 % of its chunks were fmt's).
        "**/_vendor/**", "**/vendored/**", "**/bundled/**",
        # A copy of GoogleTest kept beside a project's tests (fmt's test/gtest/).
        *(f"**/{tests}/{framework}/**" for tests in ("test", "tests")
          for framework in ("gtest", "gmock", "googletest")),
    )),
    ("vendored", SKIP_BUILD_OUTPUT, (
        "**/build/**", "**/dist/**", "**/target/**", "**/__pycache__/**", "**/.tox/**",
        "**/.nox/**", "**/.mypy_cache/**", "**/.pytest_cache/**", "**/.ruff_cache/**",
        "**/.next/**", "**/.nuxt/**", "**/.gradle/**", "**/.eggs/**", "**/*.egg-info/**",
        "*.min.js", "*.min.css", "*.js.map", "*.css.map",
    )),
    ("generated", None, (
        "*_pb2.py", "*_pb2.pyi", "*_pb2_grpc.py", "*.pb.go", "*.pb.gw.go", "*.pb.cc", "*.pb.h",
        "*.generated.*", "*.g.dart", "*.freezed.dart", "**/generated/**", "**/__generated__/**",
        "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock",
        "Pipfile.lock", "uv.lock", "pdm.lock", "Cargo.lock", "Gemfile.lock", "composer.lock",
        "go.sum", "flake.lock",
        # What Psalm's and PHPStan's baseline commands write: the errors they were told to
        # accept, by file and message (guzzle's psalm-baseline.xml quotes its code).
        "psalm-baseline.*", "phpstan-baseline.*",
    )),
    ("backup", None, (
        "*_old.*", "*.old", "*.bak", "*.backup", "*.orig", "*.rej", "*~", "*.swp", "*.swo",
        "*.tmp", "#*#",
    )),
    ("fixture", None, (
        "**/fixtures/**", "**/__fixtures__/**", "**/testdata/**", "**/__snapshots__/**", "*.snap",
        # Maven's and Gradle's test resources: the pages, keys and data tests read.
        "**/test/resources/**", "**/src/*Test/resources/**", "**/test_files/**",
        "**/test-files/**", "**/test_data/**",
        "**/test-data/**",
        # Expected outputs tests compare against (SwiftPM's ``Tests/…/Snapshots/``).
        *(f"**/{tests}/**/snapshots/**" for tests in ("test", "tests", "spec", "__tests__")),
    )),
    ("test", None, (
        "**/tests/**", "**/test/**", "**/__tests__/**", "**/spec/**", "test_*.py", "*_test.py",
        # .NET's test projects (AutoMapper's src/UnitTests/, Polly.Specs/).
        "**/UnitTests/**", "**/IntegrationTests/**", "**/FunctionalTests/**",
        *(f"**/*.{suffix}/**" for suffix in ("Tests", "Test", "UnitTests", "IntegrationTests",
                                             "Specs")),
        # Gradle's and Kotlin Multiplatform's test source sets (okio's src/commonTest/).
        "**/src/*Test/**", "**/src/*Tests/**",
        # Cucumber's step definitions and support code (httparty's features/steps/).
        "features/**/*.rb", "features/**/*.js", "features/**/*.ts", "features/**/*.py",
        "conftest.py", "*_test.go", "*Test.java", "*Tests.java", "*Test.kt", "*Tests.kt",
        "*Test.cs", "*Tests.cs", "*Test.swift", "*Tests.swift", "*_spec.rb", "*_test.rb",
        "*_test.cc", "*_test.cpp", "*_unittest.cc", "test.c", "test_*.c", "*_test.c",
        # Base classes and helpers shipped for tests (flysystem's FilesystemAdapterTestCase,
        # AdapterTestUtilities/): test code outside a tests directory.
        "?*TestCase.php", "?*TestCase.java", "?*TestCase.kt", "?*TestCase.cs", "?*TestCase.swift",
        "**/*TestUtilities/**", "**/*TestUtils/**", "**/test-utils/**", "**/testutils/**",
        "*Test.php", *(f"*.test.{ext}" for ext in _JS_EXTS), *(f"*.spec.{ext}" for ext in _JS_EXTS),
        "?*Bench.php",  # phpbench's benchmarks (league/csv's ReaderBench)
        # Benchmarks call the implementation as tests do (asv's, vitest's ``*.bench.ts``).
        "**/benchmarks/**", "**/benchmark/**", "**/__benchmarks__/**", "**/bench/**",
        "**/benches/**",  # Cargo's
        "**/*.Benchmarks/**", "**/*.Benchmark/**",  # .NET benchmark projects
        "**/__performance_tests__/**", *(f"*.bench.{ext}" for ext in _JS_EXTS),
    )),
    ("changelog", None, (
        "CHANGELOG*", "CHANGES", "CHANGES.*", "HISTORY", "HISTORY.*", "NEWS", "NEWS.*",
        # file names keep their case (``History.swift`` is code); these are changelogs in any
        *(f"{name}.{ext}" for name in ("ChangeLog", "Changelog", "changelog", "Changes",
                                       "History", "News") for ext in ("md", "rst", "rdoc", "txt")),
        "ChangeLog", "ChangeLog-*",
        "RELEASE_NOTES*", "RELEASE-NOTES*", "whats-new.*", "whatsnew.*", "**/whatsnew/**",
        "**/changelog/**", "**/changelog.d/**", "**/release-notes/**", "**/releases/*.txt",
        "**/releases/*.rst", "**/releases/*.md",
        "**/src/changes/changes.xml",  # Maven's changes plugin (commons-cli's)
    )),
    ("translation", None, (
        "*.po", "*.pot", "*.mo", "*.xlf", "*.xliff", "**/LC_MESSAGES/**",
        "**/locales/*.json", "**/locale/*.json", "**/i18n/*.json",  # yargs' locales/fr.json
    )),
    ("config", None, _NAMED_CONFIG),
    ("doc", None, (
        *_PROSE, "*.txt", "**/docs/**", "**/doc/**",
        # Programs that show the code in use, as GitHub linguist files them: callers of the
        # implementation, which a question about the implementation should not get first.
        "examples/**", "example/**", "demos/**", "demo/**", "samples/**", "sample/**",
        "tutorials/**", "tutorial/**",
        "_examples/**", "_example/**",  # Go's, kept out of the build by the underscore
        # The programs a documentation site includes (FastAPI's and Typer's ``docs_src``).
        "docs_src/**", "docs-src/**", "documentation/**",
        # A Maven site's pages (``src/site/xdoc/*.xml``, ``apt``, ``fml``): its documentation.
        "**/src/site/**",
    )),
    ("config", None, (
        "*.toml", "*.yaml", "*.yml", "*.json", "*.jsonc", "*.json5", "*.ini", "*.cfg", "*.conf",
        "*.properties", "*.xml", "*.env", "*.neon",
        # A template of a config checked in for copying (PHPUnit's ``phpunit.xml.dist``).
        *(f"*.{ext}.dist" for ext in ("xml", "neon", "yml", "yaml", "json", "ini", "toml")),
        # PHP-CS-Fixer's configuration, PHP code that no other code calls.
        ".php-cs-fixer.php", ".php-cs-fixer.dist.php", ".php_cs", ".php_cs.dist",
    )),
)

# A file a test rule matched that is not code is data the tests read or compare against, a
# fixture (loguru's expected tracebacks, tests/exceptions/output/**/*.txt), unless it is one of
# these: the suite's prose (a README, doctests in .rst), its settings by name (CMakeLists.txt)
# or test cases written as data (pytest-mypy-plugins' test_*.yml).
TEST_FILES_NOT_DATA = (
    *_PROSE, "README.*", *_NAMED_CONFIG, "test_*.yml", "test_*.yaml",
)

# Pictures stored as text (vector drawings in XML or PostScript, ASCII bitmaps): not indexed,
# whatever their directory (loguru's docs/_static/img/logo.svg, 194 KB of path data).
IMAGE_EXTENSIONS = frozenset({
    ".svg", ".eps", ".epsf", ".ps", ".xpm", ".xbm", ".pbm", ".pgm", ".ppm", ".pnm",
})
