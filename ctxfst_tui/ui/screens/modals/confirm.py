"""A yes/no question as a modal: nothing destructive happens without it."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class YesNoModal(ModalScreen[bool]):
    """A modal answered yes or no: its ``#yes`` / ``#no`` buttons and ``answer`` bindings dismiss it
    with True / False. The button named by ``focus_button`` has focus (Enter presses it); a
    subclass sets it rather than defining ``on_mount``, which Textual would run as well as this one."""

    focus_button = "#yes"

    def on_mount(self) -> None:
        self.query_one(self.focus_button, Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class ConfirmScreen(YesNoModal):
    """Dismisses with True (y / Enter on Yes) or False (n / Escape)."""

    DEFAULT_CSS = """
    ConfirmScreen {
        align: center middle;
        background: $background 60%;
    }
    ConfirmScreen > #dialog {
        width: 72;
        height: auto;
        padding: 1 2;
        border: thick $primary;
        background: $surface;
    }
    ConfirmScreen #question { margin-bottom: 1; }
    ConfirmScreen #buttons { height: auto; align-horizontal: right; }
    ConfirmScreen Button { margin-left: 2; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str, yes: str = "Yes", no: str = "Cancel", focus_yes: bool = True) -> None:
        super().__init__()
        self.question = question
        self.yes, self.no = yes, no
        self.focus_button = "#yes" if focus_yes else "#no"  # "#no" when yes loses work: Enter then cancels

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.question, id="question")
            with Horizontal(id="buttons"):
                yield Button(self.no, id="no")
                yield Button(self.yes, id="yes", variant="primary")
