"""Failed tries in a row against Redis (or the broker), for the loops that must outlive it.

The wait before the next try doubles up to ``MAX_RETRY_WAIT_SECONDS``, so a restarted Redis or
a standby is picked up within seconds; the log says so when an outage starts, each time the
count of failures doubles and when it ends, instead of a line on every tick of it.
"""

from __future__ import annotations

import logging
import time

MAX_RETRY_WAIT_SECONDS = 8.0


class Outage:
    def __init__(self, log: logging.Logger, what: str):
        self.log = log
        self.what = what
        self.failures = 0
        self.started_monotonic = 0.0

    def failed(self, exc: Exception, pace_seconds: float) -> float:
        """Note one failed try; the seconds to wait before the next."""
        self.failures += 1
        if self.failures == 1:
            self.started_monotonic = time.monotonic()
            self.log.warning("%s failed (retrying, waits up to %.0f s): %s", self.what,
                             MAX_RETRY_WAIT_SECONDS, exc)
        elif self.failures & (self.failures - 1) == 0:
            self.log.warning("%s still failing after %d tries (%.0f s): %s", self.what,
                             self.failures, self._seconds(), exc)
        return min(MAX_RETRY_WAIT_SECONDS, pace_seconds * 2 ** self.failures)

    def ended(self) -> None:
        """Note a try that worked; says so once after an outage."""
        if self.failures:
            self.log.warning("%s works again after %d failed tries (%.0f s)", self.what,
                             self.failures, self._seconds())
        self.failures = 0

    def _seconds(self) -> float:
        return time.monotonic() - self.started_monotonic
