"""``python -m freshmark``: the same command line as the ``freshmark`` script."""

from freshmark.faces.cli.main import main

if __name__ == "__main__":
    main()
