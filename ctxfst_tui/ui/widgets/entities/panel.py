"""The entity panel: every entity of the workspace, and the merges the alias clustering suggests.

The table and the suggestion list only render what the screen hands them and post intents
(``EntityTable.EntityEditRequested``, ``ClusterList.MergeRequested``); the screen shows the diff, asks, and runs the
operation. Which member of a suggestion is the canonical one is view state kept here until
the user merges (``c`` cycles through the members).
"""
from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, OptionList
from textual.widgets.option_list import Option

from ctxfst_tui.core.entities.aliases import Cluster
from ctxfst_tui.services.analysis import EntityInfo

TIER_STYLE = {"sure": "$text-success", "review": "$text-warning"}


def fit_names(names: list[str], width: int) -> str:
    """``names`` joined by commas within ``width`` cells: as many as fit, then ``+N`` for the rest
    (a first name too long on its own is cut with an ellipsis), so a cell never scrolls sideways."""
    if not names:
        return ""
    full = ", ".join(names)
    if cell_len(full) <= width:
        return full
    shown: list[str] = []
    for i, name in enumerate(names):
        rest = f" +{len(names) - i - 1}" if i + 1 < len(names) else ""
        candidate = ", ".join([*shown, name]) + rest
        if cell_len(candidate) > width:
            break
        shown.append(name)
    if shown:
        return ", ".join(shown) + f" +{len(names) - len(shown)}"
    more = f" +{len(names) - 1}" if len(names) > 1 else ""
    return set_cell_size(names[0], max(1, width - cell_len(more) - 1)) + "…" + more


def cut(text: str, width: int) -> str:
    """``text`` within ``width`` cells, ending in … when it had to be cut."""
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, max(width - 1, 0)) + "…"


def fit_columns(natural: list[int], least: list[int], room: int) -> list[int]:
    """Column widths within ``room`` cells: each column its ``natural`` width when all fit; else
    the widest are narrowed first, never below ``least``, so every column keeps a readable part
    (the sum may pass ``room`` only when even the least widths do not fit)."""
    widths = [max(n, m) for n, m in zip(natural, least)]
    over = sum(widths) - room
    while over > 0:
        shrinkable = [i for i, w in enumerate(widths) if w > least[i]]
        if not shrinkable:
            break
        top = max(widths[i] for i in shrinkable)
        widest = [i for i in shrinkable if widths[i] == top]
        below = max([widths[i] for i in shrinkable if widths[i] < top] + [max(least[i] for i in widest)])
        step = min(top - below, -(-over // len(widest))) or 1
        for i in widest:
            if over <= 0:
                break
            cut_by = min(step, widths[i] - least[i], over)
            widths[i] -= cut_by
            over -= cut_by
    return widths


# The least width of each column: enough to tell rows apart (the id past its "entity:" prefix).
LEAST = {"id": 13, "name": 8, "type": 5, "aliases": 7, "chunks": 6, "documents": 9}
# Narrowed first, down to these: the lists (they end in +N) before the id and the name.
COMFORTABLE = {"id": 24, "name": 14, "type": 9, "aliases": 10, "chunks": 6, "documents": 18}


class EntityTable(DataTable[Text]):
    """One row per entity id: id, name, type, aliases, chunk links, documents."""

    @dataclass(eq=False)
    class EntityEditRequested(Message):
        """Edit an entity: ``what`` is "entity" (id, name, type), "aliases" or "delete"."""

        entity: EntityInfo
        what: str

    BINDINGS = [
        Binding("e", "edit('entity')", "Edit", id="entities.edit", tooltip="Rename the id, rename or retype the entity"),
        Binding("a", "edit('aliases')", "Aliases", id="entities.aliases", tooltip="Add or remove aliases"),
        Binding("delete,d", "edit('delete')", "Delete", id="entities.delete", tooltip="Delete the entity and its links"),
    ]
    COMPONENT_CLASSES = {"entity-table--undeclared", "entity-table--muted", "entity-table--id"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._entities: list[EntityInfo] = []
        self._rendered_width = 0
        self.border_title = "Entities"

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._render_rows())
        self._render_rows()

    # ------------------------------------------------------------ what the screen hands down
    @property
    def entities(self) -> list[EntityInfo]:
        return list(self._entities)

    @property
    def ids(self) -> list[str]:
        return [e.id for e in self._entities]

    @property
    def current(self) -> EntityInfo | None:
        if not self._entities or not 0 <= self.cursor_row < len(self._entities):
            return None
        return self._entities[self.cursor_row]

    def show_entities(self, entities: list[EntityInfo]) -> None:
        keep = self.current.id if self.current is not None else None
        row = self.cursor_row
        self._entities = list(entities)
        ids = self.ids
        self._render_rows(ids.index(keep) if keep in ids else row)
        declared = sum(e.declared for e in entities)
        undeclared = len(entities) - declared
        self.border_subtitle = f"{declared} declared" + (f" · {undeclared} undeclared" if undeclared else "")

    def highlight(self, entity_id: str) -> bool:
        ids = self.ids
        if entity_id in ids:
            self.move_cursor(row=ids.index(entity_id), scroll=True)
            return True
        return False

    # ------------------------------------------------------------ rendering
    def _style(self, component: str):
        return self.get_component_rich_style(f"entity-table--{component}", partial=True)

    def on_resize(self) -> None:
        if self._rendered_width != self.scrollable_content_region.width:
            self._render_rows(self.cursor_row)  # the columns follow the width, an empty table's too

    def _render_rows(self, cursor_row: int = 0) -> None:
        """Every column fits the table's width (no sideways scrolling): at its full width when all
        can, else the widest are narrowed and their cells end in … (aliases and documents show as
        many names as fit, then +N). When even that leaves too little (80 columns with the tree
        shown), the aliases follow the name in its column: ``Kubernetes (K8s, kube)``."""
        self.clear(columns=True)
        muted, undeclared, id_style = self._style("muted"), self._style("undeclared"), self._style("id")
        region = self.scrollable_content_region
        self._rendered_width = width = region.width
        if len(self._entities) + 1 > region.height and not self.show_vertical_scrollbar:
            width -= self.styles.scrollbar_size_vertical  # (the header row and the rows): it will show
        pad = 2 * self.cell_padding
        folded = bool(width) and sum(LEAST.values()) + pad * len(LEAST) > width

        names: list[str] = []
        for e in self._entities:
            name = (e.name or "") if e.declared else "(undeclared)"
            if folded and e.aliases:
                name = f"{name} ({', '.join(e.aliases)})" if name else ", ".join(e.aliases)
            names.append(name)
        columns: list[tuple[str, str, list[str]]] = [  # (key, header, each row's full text)
            ("id", "Id", [e.id for e in self._entities]),
            ("name", "Name (aliases)" if folded else "Name", names),
            ("type", "Type", [(e.type or "—") if e.declared else "—" for e in self._entities]),
        ]
        if not folded:
            columns.append(("aliases", "Aliases", [", ".join(e.aliases) for e in self._entities]))
        columns += [
            ("chunks", "Chunks", [str(e.chunks) for e in self._entities]),
            ("documents", "Documents", [", ".join(e.documents) for e in self._entities]),
        ]
        natural = [max([cell_len(header)] + [cell_len(t) for t in texts]) for _key, header, texts in columns]
        least = [LEAST[key] for key, _header, _texts in columns]
        comfortable = [max(m, min(n, COMFORTABLE[key])) for (key, _h, _t), n, m in zip(columns, natural, least)]
        room = width - pad * len(columns) if width else 10_000
        widths = fit_columns(fit_columns(natural, comfortable, room), least, room)
        spare = room - sum(widths)
        for i, n in enumerate(natural):  # width left over goes back to the cut columns first, then Documents
            give = max(0, min(spare, n - widths[i]))
            widths[i] += give
            spare -= give
        if spare > 0:
            widths[-1] += spare
        for (key, header, _texts), w in zip(columns, widths):
            self.add_column(cut(header, w), key=key, width=w)
        w = dict(zip((key for key, _h, _t in columns), widths))
        for e, name in zip(self._entities, names):
            if e.declared:
                name_style = "" if e.name else muted
                kind_style = "" if e.type else muted
            else:
                name_style, kind_style = undeclared, muted
            row = [
                Text(cut(e.id, w["id"]), id_style if e.declared else undeclared),
                Text(cut(name, w["name"]), name_style),
                Text(cut((e.type or "—") if e.declared else "—", w["type"]), kind_style),
            ]
            if not folded:
                row.append(Text(fit_names(list(e.aliases), w["aliases"]), muted) if e.aliases else Text(""))
            row += [Text(str(e.chunks), justify="right"), Text(fit_names(list(e.documents), w["documents"]), muted)]
            self.add_row(*row, key=e.id)
        if self._entities:
            self.move_cursor(row=max(0, min(cursor_row, len(self._entities) - 1)), scroll=True)

    # ------------------------------------------------------------ intents
    def action_edit(self, what: str) -> None:
        entity = self.current
        if entity is None:
            self.notify("No entity selected.", severity="warning", timeout=2)
            return
        self.post_message(self.EntityEditRequested(entity, what))


class ClusterList(OptionList):
    """The suggested merges: tier, the canonical entity and the ones merged into it, and why."""

    @dataclass(eq=False)
    class MergeRequested(Message):
        """Merge ``merged`` into ``into`` (the screen shows the diff and asks first)."""

        into: str
        merged: list[str]
        tier: str

    BINDINGS = [
        Binding("m", "merge", "Merge", id="clusters.merge", tooltip="Show the diff of the merge, then merge"),
        Binding("c", "cycle_canonical", "Canonical", id="clusters.canonical", tooltip="Choose which member the others merge into"),
        Binding("x", "dismiss", "Dismiss", id="clusters.dismiss", tooltip="Hide this suggestion for the session"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._clusters: list[Cluster] = []
        self._names: dict[str, str] = {}
        self._canonical: dict[frozenset, str] = {}  # the user's choice, per cluster
        self._dismissed: set[frozenset] = set()
        self._shown: list[Cluster] = []
        self.border_title = "Suggested merges"

    # ------------------------------------------------------------ what the screen hands down
    @property
    def clusters(self) -> list[Cluster]:
        """The suggestions shown (dismissed ones left out)."""
        return list(self._shown)

    @property
    def current(self) -> Cluster | None:
        i = self.highlighted
        return self._shown[i] if i is not None and 0 <= i < len(self._shown) else None

    def canonical(self, cluster: Cluster) -> str:
        chosen = self._canonical.get(frozenset(cluster.members))
        return chosen if chosen in cluster.members else cluster.canonical

    def show_clusters(self, clusters: list[Cluster], names: dict[str, str]) -> None:
        keep = frozenset(self.current.members) if self.current is not None else None
        old = self.highlighted or 0
        self._clusters = list(clusters)
        self._names = dict(names)
        self._render_options(keep, old)

    def _render_options(self, keep: frozenset | None = None, old: int = 0) -> None:
        self._shown = [c for c in self._clusters if frozenset(c.members) not in self._dismissed]
        self.clear_options()
        for c in self._shown:
            self.add_option(Option(self._prompt(c)))
        if not self._shown:
            self.add_option(Option(Content.from_markup("[$text-muted]No merges to suggest: no two entities look alike.[/]"), disabled=True))
        sure = sum(c.tier == "sure" for c in self._shown)
        self.border_subtitle = f"{sure} sure · {len(self._shown) - sure} to review" if self._shown else ""
        if self._shown:
            keys = [frozenset(c.members) for c in self._shown]
            self.highlighted = keys.index(keep) if keep in keys else min(old, len(self._shown) - 1)

    def _entity(self, eid: str) -> Content:
        name = self._names.get(eid)
        if name:
            return Content.assemble((eid, "bold"), " ", (f"“{name}”", "$text-muted"))
        return Content.styled(eid, "bold")

    def _prompt(self, c: Cluster) -> Content:
        into = self.canonical(c)
        merged = [m for m in c.members if m != into]
        tier = Content.styled(f"{c.tier:<6}", f"{TIER_STYLE.get(c.tier, '$text-muted')} bold")
        parts: list = [tier, " ", self._entity(into), ("  ⟵  ", "$text-accent")]
        for i, m in enumerate(merged):
            if i:
                parts.append(", ")
            parts.append(self._entity(m))
        evidence = [r for r in c.reasons if not r.startswith("canonical ")] or c.reasons
        why = Content.styled("       " + (evidence[0] if evidence else ""), "$text-muted italic")
        return Content.assemble(*parts, "\n", why)

    # ------------------------------------------------------------ intents
    def action_cycle_canonical(self) -> None:
        c = self.current
        if c is None:
            return
        members = c.members
        now = self.canonical(c)
        self._canonical[frozenset(members)] = members[(members.index(now) + 1) % len(members)]
        self.replace_option_prompt_at_index(self.highlighted or 0, self._prompt(c))

    def action_dismiss(self) -> None:
        c = self.current
        if c is None:
            return
        self._dismissed.add(frozenset(c.members))
        self._render_options(None, self.highlighted or 0)

    def action_merge(self) -> None:
        c = self.current
        if c is None:
            self.notify("No merge suggestion selected.", severity="warning", timeout=2)
            return
        into = self.canonical(c)
        self.post_message(self.MergeRequested(into, [m for m in c.members if m != into], c.tier))

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_merge()


class EntityPanel(Vertical):
    """The entity table above the suggested merges."""

    def compose(self) -> ComposeResult:
        yield EntityTable(id="entity-table")
        yield ClusterList(id="cluster-list")

    def show(self, entities: list[EntityInfo], clusters: list[Cluster]) -> None:
        self.query_one(EntityTable).show_entities(entities)
        names = {e.id: e.name for e in entities if e.name}
        self.query_one(ClusterList).show_clusters(clusters, names)
