"""Background work runs below the UI thread's priority, and so do the threads it starts."""
from __future__ import annotations

import sys
import threading

import pytest

from ctxfst_tui.core.background import BACKGROUND_NICE, lower_this_thread, run_in_background, thread_nice

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value per thread is Linux's")


@linux_only
def test_work_runs_lowered_and_the_threads_it_starts_inherit_it():
    caller = thread_nice()

    def work() -> tuple[int | None, int | None, str]:
        seen: list[int | None] = []
        child = threading.Thread(target=lambda: seen.append(thread_nice()))  # as a native pool starts its threads
        child.start()
        child.join()
        return thread_nice(), seen[0], threading.current_thread().name

    own, child, name = run_in_background(work)
    assert own is not None and own >= BACKGROUND_NICE and child == own
    assert name.startswith("ctxfst-background")
    assert thread_nice() == caller  # the caller (the UI thread, a worker) is left as it was


def test_results_and_errors_come_back_to_the_caller():
    assert run_in_background(sorted, [3, 1, 2]) == [1, 2, 3]
    with pytest.raises(ZeroDivisionError):
        run_in_background(lambda: 1 / 0)


def test_the_main_thread_is_never_lowered():
    before = thread_nice()
    assert lower_this_thread() is False
    assert thread_nice() == before
