"""Producers of index jobs: webhook receivers, the watchdog watcher and the layered scheduler."""
