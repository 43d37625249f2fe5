"""freshmark: a version-stamped, per-branch code index that hands agents only what is still true."""

__version__ = "0.1.0"
