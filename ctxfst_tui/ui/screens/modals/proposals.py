"""Review of the entities a model job proposes for one document: tick what to add, see the chunk
links that come with it, apply or cancel. Nothing is written unless applied.

Dismisses with the set of ticked entity ids (new ones to declare, existing ones to link), or None.
"""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, SelectionList, Static

from ctxfst_tui.core.entities.extract import EntityProposal, Proposals
from ctxfst_tui.ui.widgets.footer import KeyFooter
from ctxfst_tui.core.text.plural import count


def _new_label(p: EntityProposal) -> Content:
    aliases = f"  aliases: {', '.join(p.aliases)}" if p.aliases else ""
    chunks = len(p.chunks)
    return Content.assemble((p.name, "bold"), f" ({p.type or 'no type'})  ", (p.id, "$text-muted"), aliases,
                            (f"  · {chunks} chunk{'s' if chunks != 1 else ''} · {', '.join(p.sources)}", "$text-muted"))


def _matched_label(p: EntityProposal, links: int) -> Content:
    return Content.assemble((p.id, "bold"), f"  {p.name}", (f"  · link {links} more chunk{'s' if links != 1 else ''}", "$text-muted"))


class ProposalsScreen(ModalScreen[set[str] | None]):
    """Two lists of checkboxes (new entities, existing ones to link) and the links they bring."""

    DEFAULT_CSS = """
    ProposalsScreen {
        align: center middle;
        background: $background 60%;
    }
    ProposalsScreen > #dialog {
        width: 90%;
        max-width: 140;
        height: auto;
        max-height: 90%;
        padding: 1 2;
        border: thick $primary;
        background: $surface;
    }
    ProposalsScreen #proposals-title { margin-bottom: 1; }
    ProposalsScreen #proposals-note { color: $text-warning; margin-bottom: 1; height: auto; }
    ProposalsScreen .list-title { color: $text-muted; margin-top: 1; }
    ProposalsScreen SelectionList {
        height: auto;
        max-height: 14;
        border: round $foreground 25%;
        &:focus { border: round $border; }
    }
    ProposalsScreen #links-scroll {
        height: auto;
        max-height: 12;
        border: round $foreground 25%;
        background: $background;
    }
    ProposalsScreen #links { width: auto; padding: 0 1; }
    ProposalsScreen #buttons { height: auto; align-horizontal: right; margin-top: 1; }
    ProposalsScreen Button { margin-left: 2; }
    """
    BINDINGS = [
        Binding("y", "apply", "Apply", id="proposals.apply", tooltip="Add the ticked entities and their chunk links"),
        Binding("a", "toggle_all", "All/none", id="proposals.toggle-all", tooltip="Tick or untick every entry of this list"),
        Binding("escape,n", "cancel", "Cancel", id="proposals.cancel"),
    ]

    def __init__(self, label: str, proposals: Proposals) -> None:
        super().__init__()
        self.label = label
        self.proposals = proposals

    def compose(self) -> ComposeResult:
        props = self.proposals
        links: dict[str, int] = {}
        for link in props.links:
            links[link.entity_id] = links.get(link.entity_id, 0) + 1
        with Vertical(id="dialog"):
            yield Static(Content.assemble("Entities proposed for ", (self.label, "bold"), " — tick what to add, then ",
                                          ("y", "bold"), " (or Apply)."), id="proposals-title")
            notes = []
            if props.cancelled:
                notes.append("The job was cancelled: these are the proposals from the chunks read so far.")
            if props.model_errors:
                notes.append(f"The model failed on {count(len(props.model_errors), 'chunk')}: {props.model_errors[0]}")
            if notes:
                yield Static("\n".join(notes), id="proposals-note")
            if props.entities:
                yield Static(f"New entities ({len(props.entities)})", classes="list-title")
                yield SelectionList[str](*((_new_label(p), p.id, True) for p in props.entities), id="new-entities")
            if props.matched:
                yield Static(f"Existing entities found in more chunks ({len(props.matched)})", classes="list-title")
                yield SelectionList[str](*((_matched_label(p, links.get(p.id, 0)), p.id, True) for p in props.matched),
                                         id="matched-entities")
            yield Static("Chunk links that come with the ticked entities", classes="list-title")
            with VerticalScroll(id="links-scroll"):
                yield Static(id="links")
            with Horizontal(id="buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Apply", id="apply", variant="primary")
        yield KeyFooter()

    def on_mount(self) -> None:
        lists = self.query(SelectionList)
        if lists:
            lists.first().focus()
        else:
            self.query_one("#apply", Button).focus()
        self._show_links()

    @property
    def chosen(self) -> set[str]:
        out: set[str] = set()
        for selection in self.query(SelectionList):
            out.update(selection.selected)
        return out

    def _show_links(self) -> None:
        chosen = self.chosen
        lines = [Content.assemble(link.chunk_id, ("  →  ", "$text-muted"), (link.entity_id, "bold"),
                                  (f"  ('{link.evidence}')", "$text-muted"))
                 for link in self.proposals.links if link.entity_id in chosen]
        body = Content("\n").join(lines) if lines else Content.styled("(no chunk links)", "$text-muted")
        self.query_one("#links", Static).update(body)
        new = len(chosen & {p.id for p in self.proposals.entities})
        self.query_one("#apply", Button).label = f"Apply ({new} new, {len(lines)} link{'s' if len(lines) != 1 else ''})"

    @on(SelectionList.SelectedChanged)
    def _changed(self) -> None:
        self._show_links()

    def action_toggle_all(self) -> None:
        focused = self.focused
        if isinstance(focused, SelectionList):
            if len(focused.selected) == focused.option_count:
                focused.deselect_all()
            else:
                focused.select_all()

    @on(Button.Pressed, "#apply")
    def action_apply(self) -> None:
        self.dismiss(self.chosen)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
