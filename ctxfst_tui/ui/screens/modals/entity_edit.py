"""Small forms for editing one entity: its id, name and type; its aliases.

They only collect what the user typed and dismiss with it; the screen turns that into
entity operations (one undoable edit) and reports what failed.
"""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from ctxfst_tui.core.format.schema import ENTITY_TYPES
from ctxfst_tui.services.analysis import EntityInfo

FORM_CSS = """
{name} {{
    align: center middle;
    background: $background 60%;
}}
{name} > #dialog {{
    width: 76;
    height: auto;
    padding: 1 2;
    border: thick $primary;
    background: $surface;
}}
{name} #form-title {{ margin-bottom: 1; }}
{name} .form-row {{ height: auto; margin-bottom: 1; }}
{name} .form-label {{ width: 10; padding: 1 1 0 0; color: $text-muted; }}
{name} .form-row Input, {name} .form-row Select {{ width: 1fr; }}
{name} #form-hint {{ color: $text-muted; margin-bottom: 1; }}
{name} #buttons {{ height: auto; align-horizontal: right; }}
{name} Button {{ margin-left: 2; }}
"""


def split_aliases(text: str) -> list[str]:
    """Comma-separated aliases, trimmed, empty ones and repeats (case-insensitive) dropped."""
    out: list[str] = []
    seen: set[str] = set()
    for part in text.split(","):
        alias = part.strip()
        if alias and alias.casefold() not in seen:
            seen.add(alias.casefold())
            out.append(alias)
    return out


class _Form(ModalScreen[dict | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="form.cancel")]

    def _buttons(self) -> Horizontal:
        return Horizontal(Button("Cancel", id="cancel"), Button("Save", id="save", variant="primary"), id="buttons")

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#save")
    @on(Input.Submitted)
    def _save(self) -> None:
        self.dismiss(self.result())

    def result(self) -> dict | None:  # pragma: no cover - overridden
        return None


class EntityEditScreen(_Form):
    """Id, name and type of one entity; dismisses with the changed fields only (or None)."""

    DEFAULT_CSS = FORM_CSS.format(name="EntityEditScreen")

    def __init__(self, entity: EntityInfo) -> None:
        super().__init__()
        self.entity = entity

    def compose(self) -> ComposeResult:
        e = self.entity
        types = sorted(ENTITY_TYPES | ({e.type} if e.type else set()))
        with Vertical(id="dialog"):
            yield Static(Content.assemble("Edit ", (e.id, "bold")), id="form-title")
            with Horizontal(classes="form-row"):
                yield Label("Id", classes="form-label")
                yield Input(e.id, id="entity-id")
            with Horizontal(classes="form-row"):
                yield Label("Name", classes="form-label")
                yield Input(e.name or "", id="entity-name", disabled=not e.declared)
            with Horizontal(classes="form-row"):
                yield Label("Type", classes="form-label")
                yield Select([(t, t) for t in types], value=e.type if e.type else Select.NULL, id="entity-type",
                             disabled=not e.declared, prompt="(no type)")
            hint = "A new id is rewritten in every declaration, chunk link and state reference."
            if not e.declared:
                hint = "This id is linked but declared nowhere: only the id can change here."
            yield Static(hint, id="form-hint")
            yield self._buttons()

    def on_mount(self) -> None:
        self.query_one("#entity-name" if self.entity.declared else "#entity-id", Input).focus()

    def result(self) -> dict:
        e = self.entity
        out: dict = {}
        new_id = self.query_one("#entity-id", Input).value.strip()
        if new_id and new_id != e.id:
            out["id"] = new_id
        if e.declared:
            name = self.query_one("#entity-name", Input).value.strip()
            if name and name != (e.name or ""):
                out["name"] = name
            kind = self.query_one("#entity-type", Select).value
            if isinstance(kind, str) and kind != e.type:
                out["type"] = kind
        return out


class AliasEditScreen(_Form):
    """The aliases of one entity as a comma-separated list; dismisses with {"aliases": [...]}."""

    DEFAULT_CSS = FORM_CSS.format(name="AliasEditScreen")

    def __init__(self, entity: EntityInfo) -> None:
        super().__init__()
        self.entity = entity

    def compose(self) -> ComposeResult:
        e = self.entity
        with Vertical(id="dialog"):
            yield Static(Content.assemble("Aliases of ", (e.id, "bold"), f" ({e.name})" if e.name else ""), id="form-title")
            with Horizontal(classes="form-row"):
                yield Label("Aliases", classes="form-label")
                yield Input(", ".join(e.aliases), id="entity-aliases", placeholder="e.g. K8s, kube")
            yield Static("Separate aliases with commas. Removing one here removes it from every declaration.", id="form-hint")
            yield self._buttons()

    def on_mount(self) -> None:
        box = self.query_one("#entity-aliases", Input)
        box.focus()
        box.cursor_position = len(box.value)

    def result(self) -> dict:
        return {"aliases": split_aliases(self.query_one("#entity-aliases", Input).value)}
