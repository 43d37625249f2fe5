"""The HTTP service (``freshmark serve``)."""
