"""The diff of an entity operation, coloured, with a confirm button: nothing merges unseen."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Static

from ctxfst_tui.ui.screens.modals.confirm import YesNoModal


def coloured(diff: str) -> Content:
    """A unified diff with theme colours: additions, removals, hunk headers and file headers."""
    lines: list[Content] = []
    for line in diff.splitlines():
        if line.startswith(("+++ ", "--- ")):
            lines.append(Content.styled(line, "bold $text"))
        elif line.startswith("@@"):
            lines.append(Content.styled(line, "$text-accent"))
        elif line.startswith("+"):
            lines.append(Content.styled(line, "$text-success"))
        elif line.startswith("-"):
            lines.append(Content.styled(line, "$text-error"))
        else:
            lines.append(Content.styled(line, "$text-muted"))
    return Content("\n").join(lines)


class DiffScreen(YesNoModal):
    """Dismisses with True (y, or Enter on the confirm button) or False (n / Escape)."""

    DEFAULT_CSS = """
    DiffScreen {
        align: center middle;
        background: $background 60%;
    }
    DiffScreen > #dialog {
        width: 90%;
        max-width: 140;
        height: 85%;
        padding: 1 2;
        border: thick $primary;
        background: $surface;
    }
    DiffScreen #diff-title { margin-bottom: 1; }
    DiffScreen #diff-note { margin-bottom: 1; color: $text-warning; }
    DiffScreen #diff-scroll {
        height: 1fr;
        border: round $foreground 25%;
        background: $background;
        scrollbar-size-vertical: 1;
    }
    /* Long lines end in … (the change is in the lines' starts; nothing scrolls sideways). */
    DiffScreen #diff-body { width: 1fr; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    DiffScreen #buttons { height: auto; align-horizontal: right; margin-top: 1; }
    DiffScreen Button { margin-left: 2; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Confirm", id="diff.yes"),
        Binding("n,escape", "answer(False)", "Cancel", id="diff.no"),
    ]

    def __init__(self, title: str, diff: str, yes: str = "Apply", note: str | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.diff = diff
        self.note = note
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.title_text, id="diff-title")
            if self.note:
                yield Static(self.note, id="diff-note")
            with VerticalScroll(id="diff-scroll"):
                yield Static(coloured(self.diff) if self.diff else Content.styled("(no change)", "$text-muted"), id="diff-body")
            with Horizontal(id="buttons"):
                yield Button("Cancel", id="no")
                yield Button(self.yes, id="yes", variant="primary")


