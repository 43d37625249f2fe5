"""Layer advice in Redis: what ``audit --by-dir`` advised, for a scheduler that acts on it.

The advice of ``core.dirstats`` is published as one hash (layer -> advised interval in seconds,
the shortest advised for any of its directories) that expires after ``ADVICE_TTL_SECONDS``, so
advice nobody renews stops shortening a layer's interval. A scheduler reads it only with the
config switch ``[service] adapt_layer_intervals = true``.
"""

from __future__ import annotations

from collections.abc import Iterable

import redis

from freshmark.adapters import keys
from freshmark.core.dirstats import LayerAdvice

ADVICE_TTL_SECONDS = 86400


def publish_advice(client: redis.Redis, advice: Iterable[LayerAdvice]) -> dict[str, int]:
    """Replace the published advice; returns layer -> advised interval as published."""
    by_layer: dict[str, int] = {}
    for item in advice:
        current = by_layer.get(item.layer)
        by_layer[item.layer] = min(current, item.advised_interval_seconds) \
            if current is not None else item.advised_interval_seconds
    pipe = client.pipeline(transaction=True)
    pipe.delete(keys.LAYER_ADVICE)
    if by_layer:
        pipe.hset(keys.LAYER_ADVICE, mapping={k: str(v) for k, v in by_layer.items()})
        pipe.expire(keys.LAYER_ADVICE, ADVICE_TTL_SECONDS)
    pipe.execute()
    return by_layer


def read_advice(client: redis.Redis) -> dict[str, int]:
    """Layer -> advised interval in seconds (empty when nothing was advised lately)."""
    raw = client.hgetall(keys.LAYER_ADVICE)
    out: dict[str, int] = {}
    for layer, seconds in raw.items():
        name = layer.decode() if isinstance(layer, bytes) else str(layer)
        try:
            out[name] = int(seconds)
        except (TypeError, ValueError):
            continue  # a value written by hand: ignored, not fatal to the scheduler
    return out
