"""The summary pane: what the document is and whether it is valid, at a glance."""
from __future__ import annotations

from pathlib import Path

from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from ctxfst_tui.core.text.plural import count
from ctxfst_tui.services.report import DocumentReport

STATE_STYLE = {"valid": "$text-success", "warnings": "$text-warning", "errors": "$text-error"}
GLYPH = {"valid": "✓", "warnings": "▲", "errors": "✗"}


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"



class SummaryRow(Horizontal):
    """One fact: a label and a value that wraps under itself (a hanging indent)."""

    def __init__(self, label: str, value: Content) -> None:
        self.label, self.value = label, value
        self._label = Static(label, classes="summary-label")
        self._value = Static(value, classes="summary-value")
        super().__init__(self._label, self._value)

    def show(self, label: str, value: Content) -> None:
        """Change the fact in place: a row re-used costs a repaint, a new one a mount and a restyle."""
        if label != self.label:
            self.label = label
            self._label.update(label)
        if (value.plain, value.spans) != (self.value.plain, self.value.spans):  # Content's == reads text only
            self.value = value
            self._value.update(value)


class DocumentSummary(VerticalScroll, can_focus=False):
    """Label/value rows built from a DocumentReport; holds no logic beyond formatting them."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Summary"
        self.text = ""  # the summary as plain text, as a screen reader (or a test) would read it

    def compose(self):
        yield Static(classes="summary-note")

    def on_mount(self) -> None:
        self.show_nothing()

    def _show(self, rows: list[tuple[str, Content]]) -> None:
        """Show ``rows``, re-using the rows already there: opening a document re-mounted about ten."""
        self.text = "\n".join(f"{label}: {value.plain}" for label, value in rows)
        shown = list(self.query_children(SummaryRow))
        with self.app.batch_update():
            self.query_one(".summary-note").display = False
            for row, (label, value) in zip(shown, rows):
                row.show(label, value)
                row.display = True
            for row in shown[len(rows):]:
                row.remove()
            if len(rows) > len(shown):
                self.mount_all(SummaryRow(label, value) for label, value in rows[len(shown):])

    def _show_note(self, note: Content) -> None:
        """A note instead of the rows, which are hidden, not removed: the next document re-uses them."""
        self.text = note.plain
        with self.app.batch_update():
            for row in self.query_children(SummaryRow):
                row.display = False
            shown = self.query_one(".summary-note", Static)
            shown.update(note)
            shown.display = True

    # ------------------------------------------------------------ what the screen hands down
    def show_nothing(self) -> None:
        self._show_note(Content.from_markup("[$text-muted]Select a document in the tree (↑/↓ then Enter) to see its summary.[/]"))

    def show_loading(self, path: Path) -> None:
        self._show_note(Content.from_markup("[$text-muted]Opening $name…[/]", name=path.name))

    def show_report(self, report: DocumentReport) -> None:
        status = report.status
        rows: list[tuple[str, Content]] = []
        if report.title:
            rows.append(("Title", Content.styled(report.title, "bold")))
        else:
            rows.append(("Title", Content.styled("(no title)", "$text-muted italic")))
        rows.append(("Path", Content(report.display_path)))
        verdict = "valid" if status.valid else "invalid"
        counts = f"{count(status.errors, 'error')}, {count(status.warnings, 'warning')}"
        if status.infos:
            counts += f", {status.infos} info"
        rows.append(("Status", Content.assemble((f"{GLYPH[status.state]} {verdict}", f"{STATE_STYLE[status.state]} bold"), f" — {counts}")))
        if report.unsaved:
            rows.append(("Unsaved", Content.styled("● edited in the workbench, not yet saved (ctrl+s)", "$text-warning")))
        if report.problem:
            rows.append(("Problem", Content.styled(report.problem, "$text-error")))
        if report.readable:
            if report.has_frontmatter and report.problem is None:
                rows.append(("Entities", Content(str(report.entities))))
                rows.append(("Chunks", Content(f"{report.chunks} in frontmatter")))
            elif report.problem is None:
                rows.append(("Frontmatter", Content.styled("none (plain Markdown or text)", "$text-warning")))
            rows.append(("Body chunks", Content(str(report.body_chunks))))
            rows.append(("Line ending", Content(report.newline)))
            rows.append(("BOM", Content("yes" if report.bom else "no")))
            rows.append(("Size", Content(f"{_size(report.size)}, {count(report.line_count, 'line')}")))
        else:
            rows.append(("Size", Content(_size(report.size))))
        self._show(rows)
