"""Telemetry: Prometheus counters and exposition, freshness rows, verdict counts."""
