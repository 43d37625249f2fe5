"""Git: repositories read through pygit2, and the bare mirrors workers keep."""
