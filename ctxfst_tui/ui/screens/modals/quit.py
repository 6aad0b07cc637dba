"""The question asked when quitting with unsaved edits: save and quit, quit without saving, or stay."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from ctxfst_tui.ui.screens.modals.confirm import ConfirmScreen


class QuitScreen(ConfirmScreen):
    """Dismisses with :attr:`SAVE` ("Save and quit": s, or Enter, as it has the focus), True
    ("Quit without saving": y) or False (Cancel: n / escape). A ConfirmScreen still, so ``y`` and
    ``n`` answer as in every other dialog; saving is the app's (``WorkbenchApp.action_quit``)."""

    SAVE = "save"
    BINDINGS = [Binding("s", "save", "Save and quit", id="quit.save")]

    def __init__(self, question: str) -> None:
        super().__init__(question, yes="Quit without saving", no="Cancel")
        self.focus_button = "#save"  # Enter saves: the answer that loses nothing

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.question, id="question")
            with Horizontal(id="buttons"):
                yield Button(self.no, id="no")
                yield Button(self.yes, id="yes", variant="error")
                yield Button("Save and quit", id="save", variant="primary")

    @on(Button.Pressed, "#save")
    def _save_pressed(self, event: Button.Pressed) -> None:
        event.prevent_default()  # not YesNoModal's handler, which would answer False
        self.action_save()

    def action_save(self) -> None:
        self.dismiss(self.SAVE)
