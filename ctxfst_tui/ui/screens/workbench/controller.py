"""What every controller of the workbench screen shares: its screen, the session and notify.

A controller is a plain object, not a DOM node: the screen's thin handlers call it, and it
calls services and core (in a worker for slow work) and hands results back to the panes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxfst_tui.services.session import Session
    from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen


class Controller:
    def __init__(self, screen: "WorkbenchScreen") -> None:
        self.screen = screen

    @property
    def session(self) -> "Session":
        return self.screen.session

    def notify(self, message: str, **kwargs: Any) -> None:
        self.screen.notify(message, **kwargs)
