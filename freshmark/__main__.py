"""``python -m freshmark``: the same command line as the ``freshmark`` script.

``-m`` puts the current directory first on ``sys.path``, and freshmark is run from inside the
repositories it indexes: a repository whose top-level package is named like one of freshmark's
dependencies (httpx, which chromadb imports) would be imported in its place. The entry is
dropped before anything else is imported, unless freshmark itself is loaded from there (a
source checkout, whose ``workers`` and ``scheduler`` packages are found the same way).
"""

import os
import sys


def _drop_working_directory() -> None:
    if sys.flags.safe_path or not sys.path:  # ``-P``: Python added no such entry
        return
    first = os.path.realpath(sys.path[0] or os.curdir)
    freshmark_root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if first == os.path.realpath(os.getcwd()) and first != freshmark_root:
        del sys.path[0]


if __name__ == "__main__":
    _drop_working_directory()
    from freshmark.faces.cli.main import main

    main()
