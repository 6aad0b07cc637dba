"""The workbench's error log: the traceback of every unexpected failure, for a bug report.

The workbench never shows a traceback (it would tear the screen) and never exits on one: it
notifies in one line and writes the traceback here, ``state_dir()/logs/ctxfst-tui.log``,
rotated at 1 MB (three old files kept). A log that cannot be written costs nothing but the log.
"""
from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

from ctxfst_tui.config import state_dir

LOGGER_NAME = "ctxfst_tui.errors"
MAX_BYTES = 1_000_000
BACKUPS = 3


def log_path() -> Path:
    return state_dir() / "logs" / "ctxfst-tui.log"


class _QuietRotatingHandler(logging.handlers.RotatingFileHandler):
    """A rotating file handler that drops a record it cannot write instead of printing to stderr
    (which, under the TUI, is the screen)."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        pass


def error_logger() -> logging.Logger:
    """The logger writing to ``log_path()`` (re-pointed when the state dir changes, as in tests)."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.propagate = False
    logger.setLevel(logging.ERROR)
    path = log_path()
    if any(getattr(h, "baseFilename", None) == str(path) for h in logger.handlers):
        return logger
    for old in list(logger.handlers):
        logger.removeHandler(old)
        old.close()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = _QuietRotatingHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS,
                                                         encoding="utf-8", delay=True)
    except OSError:
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    return logger


def log_failure(what: str, error: BaseException) -> Path | None:
    """Write ``error``'s traceback under the heading ``what`` failed; the log's path, or None if
    it could not be written."""
    logger = error_logger()
    logger.error("%s failed: %s: %s", what, type(error).__name__, error,
                 exc_info=(type(error), error, error.__traceback__))
    for handler in logger.handlers:
        handler.flush()
    path = log_path()
    return path if path.is_file() else None
