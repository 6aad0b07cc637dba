"""The offer, at start, to bring back unsaved edits a crash or a kill left in the journal."""
from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Static

from ctxfst_tui.ui.screens.modals.confirm import YesNoModal
from ctxfst_tui.ui.screens.modals.diff import coloured

STATES = {
    "unchanged": "",
    "changed": "CONFLICT: the file changed on disk since these edits",
    "deleted": "CONFLICT: the file is gone from disk (recovering keeps the text; ctrl+s writes it again)",
}


@dataclass(frozen=True)
class RecoveryItem:
    """One document with journaled unsaved work, as the dialog shows it."""

    label: str  # the path relative to the folder
    state: str  # unchanged / changed / deleted (on disk, since the edits were made)
    when: str  # when the edits were journaled, e.g. "2026-12-01 22:41"
    diff: str  # from the file on disk to the journaled text
    older: int = 0  # older versions of this document's edits, left by other ended sessions, set aside

    @property
    def conflict(self) -> bool:
        return self.state != "unchanged"


class RecoveryScreen(YesNoModal):
    """Dismisses with True (y / Enter: recover as unsaved edits) or False (n: discard them)."""

    DEFAULT_CSS = """
    RecoveryScreen {
        align: center middle;
        background: $background 60%;
    }
    RecoveryScreen > #dialog {
        width: 90%;
        max-width: 120;
        height: 95%;
        padding: 0 1;
        border: thick $warning;
        background: $surface;
    }
    RecoveryScreen #recovery-title { margin-bottom: 1; }
    RecoveryScreen #recovery-conflict { color: $text-warning; }
    RecoveryScreen #recovery-scroll {
        height: 1fr;
        border: round $foreground 25%;
        background: $background;
        scrollbar-size-vertical: 1;
    }
    RecoveryScreen #recovery-body { width: auto; padding: 0 1; }
    RecoveryScreen #buttons { height: auto; align-horizontal: right; }
    RecoveryScreen Button { margin-left: 2; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Recover", id="recovery.yes"),
        Binding("n", "answer(False)", "Discard", id="recovery.no"),
        Binding("up", "scroll(-1)", "Scroll up", show=False),
        Binding("down", "scroll(1)", "Scroll down", show=False),
        Binding("pageup", "scroll(-10)", "Page up", show=False),
        Binding("pagedown", "scroll(10)", "Page down", show=False),
    ]

    def __init__(self, items: list[RecoveryItem]) -> None:
        super().__init__()
        self.items = items

    @property
    def conflicts(self) -> list[RecoveryItem]:
        return [i for i in self.items if i.conflict]

    def title_text(self) -> str:
        n = len(self.items)
        names = ", ".join(f"[b]{i.label}[/]" for i in self.items[:4]) + (" …" if n > 4 else "")
        them = "them" if n != 1 else "it"
        return (f"[b]Unsaved edits found[/]: the last session on this folder ended before they were saved "
                f"(a crash, a kill or a closed terminal). {n} document{'s' if n != 1 else ''}: {names}\n"
                f"[b]y[/]/Enter recovers {them} as unsaved edits (● in the tree; u undoes; ctrl+s saves); "
                f"[b]n[/] discards {them}. ↑/↓ scroll the diff.")

    def conflict_text(self) -> str:
        conflicts = self.conflicts
        names = ", ".join(f"[b]{i.label}[/]" for i in conflicts)
        one = len(conflicts) == 1
        return (f"[b]⚠ {len(conflicts)} conflict{'' if one else 's'}[/]: {names} changed on disk after these edits were "
                "made. Recovering holds your version as unsaved edits and writes nothing. In the diff, [b]-[/] lines "
                "are what the file holds now: saving your version afterwards would replace them.")

    def body(self) -> Content:
        parts: list[Content] = []
        for item in self.items:
            head = f"── {item.label} · edited {item.when}"
            parts.append(Content.styled(head, "bold $text"))
            if item.conflict:
                parts.append(Content.styled(STATES[item.state], "bold $text-error"))
            if item.older:
                n = item.older
                parts.append(Content.styled(
                    f"Newest of {n + 1} unsaved versions left by ended sessions: this one is offered; "
                    f"the older {'one is' if n == 1 else f'{n} are'} set aside (removed with it).", "$text-warning"))
            parts.append(coloured(item.diff) if item.diff else Content.styled("(same text as on disk)", "$text-muted"))
            parts.append(Content(""))
        return Content("\n").join(parts)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.title_text(), id="recovery-title")
            if self.conflicts:
                yield Static(self.conflict_text(), id="recovery-conflict")
            with VerticalScroll(id="recovery-scroll"):
                yield Static(self.body(), id="recovery-body")
            with Horizontal(id="buttons"):
                yield Button("Discard (n)", id="no", variant="error")
                yield Button("Recover (y)", id="yes", variant="primary")


    def action_scroll(self, lines: int) -> None:
        self.query_one("#recovery-scroll", VerticalScroll).scroll_relative(y=lines, animate=False)

