"""The ranked results of a query, each explained: signals as small bars, matched terms
highlighted in a snippet, the entities that brought it and the edge they came through.

The list only renders what the pane hands it (``show_answer``); Enter on a result posts
``ResultList.ChunkChosen`` (the pane turns it into an open-the-chunk intent).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

BAR_CELLS = 6
EIGHTHS = " ▏▎▍▌▋▊▉█"
SNIPPET_CHARS = 150
SIGNAL_ORDER = ("bm25", "vector", "entity")
TERM_STYLE = "bold $text-warning"
MUTED = "$text-muted"


def bar(value: float, cells: int = BAR_CELLS) -> str:
    """``value`` in [0, 1] as a bar of ``cells`` cells, to an eighth of a cell."""
    eighths = round(max(0.0, min(1.0, value)) * cells * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (EIGHTHS[part] if part else "")).ljust(cells, "·")


def snippet(text: str, terms: list[str], width: int = SNIPPET_CHARS) -> str:
    """One line of ``text`` around the first matched term (its start when none matches)."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    folded = flat.casefold()
    hits = [i for i in (folded.find(t) for t in terms if t) if i >= 0]
    start = max(0, min(hits) - width // 4) if hits else 0
    start = min(start, len(flat) - width)
    cut = flat[start:start + width]
    return ("…" if start else "") + cut + ("…" if start + width < len(flat) else "")


def term_pattern(terms: list[str]) -> re.Pattern[str] | None:
    """Case-insensitive matcher of the matched terms, longest first (a word's stem matches the
    start of its inflections: "stor" in "storage")."""
    words = sorted({t for t in terms if t.strip()}, key=len, reverse=True)
    return re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE) if words else None


def result_prompt(result: Any) -> Content:
    """Four lines: rank, id, score and place; the signal bars; the snippet; the entity hits."""
    head = Content.assemble(
        (f"{result.rank:>2}. ", MUTED), (result.chunk_id, "bold $text-accent"),
        (f"  {result.score:.2f}", "bold"),
        (f"  {result.document}" + (f" · {result.breadcrumb}" if result.breadcrumb else ""), MUTED),
    )
    parts: list[Any] = ["    "]
    for name in SIGNAL_ORDER:
        if name in result.raw:
            parts += [(f"{name} ", MUTED), (bar(result.raw[name]), "$text-success"),
                      (f" {result.signals.get(name, 0.0):.2f}  ", MUTED)]
    signals = Content.assemble(*parts) if len(parts) > 1 else Content.styled("    (no signal)", MUTED)
    body = Content("    " + snippet(result.content or result.context or "", result.terms))
    pattern = term_pattern(result.terms)
    if pattern is not None:
        body = body.highlight_regex(pattern, style=TERM_STYLE)
    lines = [head, signals, body]
    if result.entities:
        hits = []
        for e in result.entities[:4]:
            how = f"“{e.matched}”" if e.matched else (e.via or "")
            hits.append(f"{e.name} ({how})" if how else e.name)
        more = f" +{len(result.entities) - 4}" if len(result.entities) > 4 else ""
        lines.append(Content.assemble(("    entities ", MUTED), ("; ".join(hits) + more, "$text-primary")))
    return Content("\n").join(lines)


class ResultList(OptionList):
    """One option per result, best first."""

    @dataclass(eq=False)
    class ChunkChosen(Message):
        """Enter on a result: ``key`` is its index key (``document#chunk id``)."""

        key: str
        document: str
        chunk_id: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.results: list[Any] = []
        self.border_title = "Results"

    def show_answer(self, answer: Any | None, note: str = "") -> None:
        """Render ``answer`` (core.retrieval.query.Answer), or ``note`` when there is none."""
        self.results = list(answer.results) if answer is not None else []
        self.clear_options()
        if self.results:
            self.add_options([Option(result_prompt(r), id=r.key) for r in self.results])
            self.highlighted = 0
        else:
            self.add_option(Option(Content.styled(note or "No chunk matches.", MUTED), disabled=True))
        if answer is not None:
            extra = f" · translated: {answer.translated}" if answer.translated else ""
            self.border_subtitle = f"{len(self.results)} · {answer.seconds * 1000:.0f} ms{extra}"
        else:
            self.border_subtitle = ""

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        i = event.option_index
        if 0 <= i < len(self.results):
            r = self.results[i]
            self.post_message(self.ChunkChosen(r.key, r.document, r.chunk_id))
