"""The ``freshmark`` command line."""
