"""Before a contextualize job: what will happen, with which model, and whether to skip the
chunks that already have a context. Dismisses with the options (a dict) or None."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Static


class SkipBox(Checkbox, inherit_bindings=False):
    """A checkbox whose state reads without colour (``✓`` when ticked, blank when not). Space ticks
    it; Enter is left to the dialog (it starts), so the box can hold the focus first."""

    BINDINGS = [Binding("space", "toggle_button", "Toggle", show=False)]

    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]  # Textual draws the box's inside from this
        return "✓" if self.value else " "


class DialogButton(Button, inherit_bindings=False):
    """A button that space presses as well as Enter."""

    BINDINGS = [Binding("enter,space", "press", "Press button", show=False)]


class ContextualizeScreen(ModalScreen[dict | None]):
    """``{"skip_present": bool}`` (Start: y, or Enter anywhere but on Cancel) or None (n / escape / Cancel).

    The focus starts on the "skip" box when there is something to skip (space ticks it, Enter
    starts), else on Start (Enter or space starts)."""

    DEFAULT_CSS = """
    ContextualizeScreen {
        align: center middle;
        background: $background 60%;
    }
    ContextualizeScreen > #dialog {
        width: 80;
        max-width: 95%;
        height: auto;
        padding: 1 2;
        border: thick $primary;
        background: $surface;
    }
    ContextualizeScreen #question { margin-bottom: 1; }
    ContextualizeScreen Checkbox { margin-bottom: 1; }
    ContextualizeScreen #hint { color: $text-muted; margin-bottom: 1; }
    ContextualizeScreen #buttons { height: auto; align-horizontal: right; }
    ContextualizeScreen Button { margin-left: 2; }
    """
    BINDINGS = [
        Binding("y,enter", "start", "Start", id="contextualize.start"),
        Binding("n,escape", "cancel", "Cancel", id="contextualize.cancel"),
    ]

    def __init__(self, label: str, chunks: int, present: int, model: str) -> None:
        super().__init__()
        self.label, self.chunks, self.present, self.model = label, chunks, present, model

    def compose(self) -> ComposeResult:
        n = self.chunks
        with Vertical(id="dialog"):
            yield Static(Content.assemble(
                "Contextualize ", (self.label, "bold"), f": write a retrieval note into the context of each of its "
                f"{n} chunk{'s' if n != 1 else ''}, with ", (self.model, "bold"), "."), id="question")
            p = self.present
            yield SkipBox(f"Skip the {p} chunk{'s' if p != 1 else ''} that already ha{'ve' if p != 1 else 's'} a context",
                           value=False, disabled=p == 0, id="skip-present")
            yield Static("It runs in the background: escape cancels it. The notes are applied in memory "
                         "(u undoes them, ctrl+s saves). y or Enter starts, n or escape cancels"
                         + (", space ticks the box." if p else "."), id="hint")
            with Horizontal(id="buttons"):
                yield DialogButton("Cancel", id="cancel")
                yield DialogButton("Start", id="start", variant="primary")

    def on_mount(self) -> None:
        box = self.query_one("#skip-present", Checkbox)
        (box if not box.disabled else self.query_one("#start", Button)).focus()

    @on(Button.Pressed, "#start")
    def action_start(self) -> None:
        self.dismiss({"skip_present": self.query_one("#skip-present", Checkbox).value})

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
