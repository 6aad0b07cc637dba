"""EitherEvent: set by its own event or the caller's, and a wait that wakes for either."""
from __future__ import annotations

import threading
import time

from ctxfst_tui.core.cancel import EitherEvent


def test_either_event_is_set_by_either_side():
    outer = threading.Event()
    either = EitherEvent(outer)
    assert not either.is_set()
    outer.set()
    assert either.is_set() and not either.own.is_set()
    mine = EitherEvent()
    mine.set()
    assert mine.is_set()


def test_wait_times_out_and_wakes_for_the_outer_event():
    outer = threading.Event()
    either = EitherEvent(outer, own=threading.Event())
    t0 = time.monotonic()
    assert either.wait(0.12) is False
    assert time.monotonic() - t0 >= 0.12
    threading.Timer(0.1, outer.set).start()
    t0 = time.monotonic()
    assert either.wait(5) is True
    assert time.monotonic() - t0 < 2


def test_wait_without_timeout_returns_when_its_own_event_is_set():
    either = EitherEvent(None)
    threading.Timer(0.05, either.set).start()
    assert either.wait() is True
