"""The safety net: an exception in a message handler is a notification, not the end of the app.

Textual ends the app on any exception a handler raises: ``MessagePump._process_messages_loop``
calls ``App._handle_exception`` (which prints the traceback and exits) and then leaves the loop,
so even an App that overrode ``_handle_exception`` would be left with a pump that handles nothing
more (for the App's own pump, which runs every key binding's action, a frozen app).

So the net sits one level lower: ``install()`` wraps ``MessagePump._dispatch_message`` so that,
for an app that opts in (``survive_handler_error(error, what)`` returning True), the exception is
handed to the app and the loop goes on with the next message. Every other app (and an app that
declines, e.g. during a storm of failures or while closing) gets Textual's behaviour unchanged.
"""
from __future__ import annotations

from typing import Any

from textual import events
from textual.message import Message
from textual.message_pump import MessagePump

_ORIGINAL = MessagePump._dispatch_message


def describe(pump: Any, message: Message) -> str:
    """What failed, in the words of the notification: "the m key", "ClusterList handling Click"."""
    where = type(pump).__name__
    if isinstance(message, events.Key):
        return f"the {message.key} key"
    return f"{where} handling {type(message).__name__}"


async def _guarded_dispatch(self: MessagePump, message: Message) -> None:
    try:
        await _ORIGINAL(self, message)
    except Exception as error:  # CancelledError is a BaseException: never caught here
        try:
            app = self.app
        except Exception:  # noqa: BLE001 - no active app: nothing to hand the error to
            raise error from None
        survive = getattr(app, "survive_handler_error", None)
        if survive is None or not survive(error, describe(self, message)):
            raise


def install() -> None:
    """Put the net under every message pump (idempotent)."""
    if MessagePump._dispatch_message is not _guarded_dispatch:
        MessagePump._dispatch_message = _guarded_dispatch  # type: ignore[method-assign]
