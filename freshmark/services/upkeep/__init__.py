"""Upkeep: freshness audits, status, branch requests and retirement, reconcile."""
