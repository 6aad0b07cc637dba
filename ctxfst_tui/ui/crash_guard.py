"""A parent process that outlives a native crash of the workbench and gives the terminal back.

A segfault in native code (llama.cpp, a driver, the OOM killer's SIGKILL) ends the process at
once: Textual cannot leave the alternate screen, turn mouse reporting off or restore the tty's
mode, and nothing tells the user what happened. So on a terminal the workbench runs in a forked
child while this small parent (no Textual imported) waits: when the child dies of a signal, the
parent restores the terminal, says in one line what happened and where the unsaved edits are
(the journal offers them at the next start), and exits 128 + the signal number. The child dies
with the parent (PR_SET_PDEATHSIG), so ``kill -9`` of either ends the workbench.
"""
from __future__ import annotations

import ctypes
import faulthandler
import os
import signal
import sys
from pathlib import Path
from typing import Callable

DISABLE_ENV = "CTXFST_TUI_NO_CRASH_GUARD"
PR_SET_PDEATHSIG = 1
# Leave the alternate screen; mouse, focus, paste and kitty-keyboard reporting off; line wrap
# back on (Textual turns it off, and the message would be cut at the edge); cursor shown.
TERMINAL_RESET = ("\x1b[?7h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1015l\x1b[?1004l\x1b[?2004l"
                  "\x1b[<u\x1b[?25h\x1b[?1049l\x1b[0m")


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGABRT, signal.SIGFPE}


def crash_message(number: int, journal: str | None, log: str | None) -> str:
    """The one line the user reads after the workbench died of signal ``number``."""
    if number in CRASH_SIGNALS:
        cause = f"crashed ({signal_name(number)})"
    elif number == signal.SIGKILL:
        cause = "was killed (SIGKILL: out of memory?)"
    else:
        cause = f"was stopped ({signal_name(number)})"
    where = f" ({journal})" if journal else ""
    details = f"; its stacks: {log}" if log else ""
    return (f"ctxfst-tui: the workbench {cause}; edits made up to a second before are journaled{where} "
            f"and offered when you open this folder again{details}")


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the child may outlive a killed parent
        pass


def _enable_native_traceback(log: Path | None) -> None:
    """Have Python write its stacks to ``log`` on SIGSEGV/SIGBUS/SIGILL/SIGABRT/SIGFPE."""
    if log is None:
        return
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        fh = open(log, "a", encoding="utf-8")  # kept open for the process's life: faulthandler writes to its fd
    except OSError:
        return
    faulthandler.enable(file=fh, all_threads=True)


def _size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def _restore(fd: int, saved: list | None) -> None:
    try:
        os.write(sys.__stderr__.fileno(), TERMINAL_RESET.encode())
    except OSError:
        pass
    if saved is not None:
        import termios

        try:
            termios.tcsetattr(fd, termios.TCSANOW, saved)
        except termios.error:
            pass


def run_guarded(run: Callable[[], int | None], *, journal: str | None = None, crash_log: Path | None = None) -> int:
    """Run ``run()`` (the workbench) and return its exit status; on a terminal, in a forked child
    watched by this process, which survives the child's death by a signal (see the module)."""
    stdin = sys.stdin
    if (os.environ.get(DISABLE_ENV) or not hasattr(os, "fork") or stdin is None or not stdin.isatty()
            or sys.__stderr__ is None or not sys.__stderr__.isatty()):
        return int(run() or 0)
    import termios

    fd = stdin.fileno()
    try:
        saved = termios.tcgetattr(fd)
    except termios.error:
        saved = None
    log_size = _size(crash_log)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the workbench
        code = 1
        try:
            _die_with_parent()
            _enable_native_traceback(crash_log)
            code = int(run() or 0)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # the CLI's own handler is outside the fork: say it in one line here
            kind, value = sys.exc_info()[:2]
            print(f"ctxfst-tui: internal error: {kind.__name__}: {value}", file=sys.stderr)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    # The watcher: the terminal's keys go to the workbench (raw mode), so only signals sent to the
    # process group reach here; pass termination on, ignore what the workbench handles itself.
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGWINCH):
        signal.signal(sig, signal.SIG_IGN)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda number, _frame: os.kill(pid, number))
    while True:
        try:
            _, status = os.waitpid(pid, os.WUNTRACED)
        except InterruptedError:  # pragma: no cover - retried by Python since 3.5
            continue
        if os.WIFSTOPPED(status):  # the workbench suspended itself: suspend too, then let it go on
            os.kill(os.getpid(), signal.SIGSTOP)
            os.kill(pid, signal.SIGCONT)
            continue
        break
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        _restore(fd, saved)
        log = str(crash_log) if _size(crash_log) > log_size else None  # only a stack this crash wrote
        print(crash_message(number, journal, log), file=sys.stderr)
        return 128 + number
    return os.WEXITSTATUS(status)
