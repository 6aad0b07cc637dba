"""Cancel: one Event-like view of "either of two events is set".

A long job stops for two reasons at once: its own stop (a failure, ``stop()`` of a watcher)
and the caller's cancel (a Textual worker's ``cancelled_event``, a CLI's Ctrl+C). Model
backends and loops take one event; this view lets them wait on both without a helper thread.
"""
from __future__ import annotations

import threading
import time
from typing import Protocol

POLL_SECONDS = 0.05  # how soon a wait notices the caller's event (only its own one wakes it at once)


class CancelEvent(Protocol):
    def is_set(self) -> bool: ...


class EitherEvent:
    """Set when ``own`` (created when not given; :meth:`set` sets it) or ``outer`` is set."""

    def __init__(self, outer: CancelEvent | None = None, own: threading.Event | None = None) -> None:
        self.own = own if own is not None else threading.Event()
        self.outer = outer

    def set(self) -> None:
        self.own.set()

    def is_set(self) -> bool:
        return self.own.is_set() or bool(self.outer is not None and self.outer.is_set())

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to ``timeout`` seconds (None: until set); True as soon as either event is set."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            self.own.wait(POLL_SECONDS if left is None else min(left, POLL_SECONDS))
        return True
