"""Background work at a lower CPU priority than the thread that draws the screen.

On two cores the embedder's and llama.cpp's own threads take both; at the same priority the UI
thread waits its turn behind them and every key press is drawn late. Linux keeps a nice value per
thread and a thread starts with the value of the thread that creates it, so work run here lowers
the thread pools the native libraries start from it too. An unprivileged process cannot raise a
thread's priority again, which is why the lowered threads are a pool of their own, used for nothing
else. Elsewhere than Linux (one nice value per process) the work runs at normal priority.
"""
from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

T = TypeVar("T")

BACKGROUND_NICE = 10  # the scheduler then gives a busy UI thread about nine tenths of a contended core
POOL_THREADS = 4

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def lower_this_thread(nice: int = BACKGROUND_NICE) -> bool:
    """Lower the calling thread (never the main one) to ``nice``; whether it now runs there."""
    if not sys.platform.startswith("linux") or threading.current_thread() is threading.main_thread():
        return False
    tid = threading.get_native_id()
    try:
        if os.getpriority(os.PRIO_PROCESS, tid) < nice:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
        return os.getpriority(os.PRIO_PROCESS, tid) >= nice
    except OSError:  # a sandbox that forbids it: the work still runs, at normal priority
        return False


def thread_nice() -> int | None:
    """The calling thread's nice value (None where threads have none of their own)."""
    if not sys.platform.startswith("linux"):
        return None
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def _background_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(POOL_THREADS, thread_name_prefix="ctxfst-background", initializer=lower_this_thread)
        return _pool


def run_in_background(fn: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``fn(*args, **kwargs)`` on a lowered thread; waits for it and returns (or raises) its result.
    Called from a worker thread, so the wait blocks nothing the user sees."""
    return _background_pool().submit(fn, *args, **kwargs).result()
