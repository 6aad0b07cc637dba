"""The ranked results of a query, each explained: signals as small bars, matched terms
highlighted in a snippet, the entities that brought it and the edge they came through.

The list only renders what the pane hands it (``show_answer``); Enter on a result posts
``ResultList.ChunkChosen`` (the pane turns it into an open-the-chunk intent).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len, set_cell_size
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

BAR_CELLS = 5
EIGHTHS = " ▏▎▍▌▋▊▉█"
SNIPPET_CELLS = 150
MIN_WIDTH = 20
SIGNAL_ORDER = ("bm25", "vector", "entity")
TERM_STYLE = "bold $text-warning"
MUTED = "$text-muted"


def bar(value: float, cells: int = BAR_CELLS) -> str:
    """``value`` in [0, 1] as a bar of ``cells`` cells, to an eighth of a cell."""
    eighths = round(max(0.0, min(1.0, value)) * cells * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (EIGHTHS[part] if part else "")).ljust(cells, "·")


def share(value: float) -> str:
    """A share of the score in four cells: ``.20``, ``1.00``."""
    text = f"{value:.2f}"
    return text[1:] if text.startswith("0") else text


def fit(text: str, cells: int) -> str:
    """``text`` cut to ``cells`` terminal cells with an ellipsis (CJK characters take two)."""
    if cell_len(text) <= cells:
        return text
    return set_cell_size(text, max(0, cells - 1)).rstrip() + "…"


def snippet(text: str, terms: list[str], cells: int = SNIPPET_CELLS) -> str:
    """About ``cells`` cells of ``text`` around the first matched term (its start when none matches)."""
    flat = " ".join(text.split())
    if cell_len(flat) <= cells:
        return flat
    folded = flat.casefold()
    hits = [i for i in (folded.find(t) for t in terms if t) if i >= 0]
    first = min(hits, default=0)
    start = max(0, first - cells // 6)
    while start > max(0, first - cells // 3) and not flat[start - 1].isspace():
        start -= 1  # begin at a word when one starts close enough
    lead = "…" if start else ""
    return lead + fit(flat[start:], cells - len(lead))


def wrap(text: str, cells: int, lines: int) -> list[str]:
    """``text`` broken at spaces into at most ``lines`` lines of ``cells`` cells (a word longer than
    a line, or a run of CJK with no spaces, is cut by cells); the last ends in "…" when text is left."""
    out: list[str] = []
    line = ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if cell_len(candidate) <= cells:
            line = candidate
            continue
        if line:
            out.append(line)
        while cell_len(word) > cells:
            head = set_cell_size(word, cells).rstrip() or word[0]
            out.append(head)
            word = word[len(head):]
        line = word
    if line:
        out.append(line)
    if len(out) > lines:
        out = out[:lines]
        last = out[-1]
        out[-1] = (set_cell_size(last, cells - 1).rstrip() if cell_len(last) >= cells else last) + "…"
    return out


def term_pattern(terms: list[str]) -> re.Pattern[str] | None:
    """Case-insensitive matcher of the matched terms, longest first (a word's stem matches the
    start of its inflections: "stor" in "storage")."""
    words = sorted({t for t in terms if t.strip()}, key=len, reverse=True)
    return re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE) if words else None


SHORT_NAMES = {"bm25": "bm25", "vector": "vec", "entity": "ent"}


def signal_line(result: Any, width: int) -> Content:
    """Each signal as a name, a bar and its share of the score, in the first form that fits
    ``width``: full names and 5-cell bars, then 3-cell bars, then short names, then no bars."""
    names = [name for name in SIGNAL_ORDER if name in result.raw]
    if not names:
        return Content.styled("    (no signal)", MUTED)
    forms = [(False, BAR_CELLS), (False, 3), (True, 3), (True, 0)]
    for short, cells in forms:
        parts: list[Any] = ["    "]
        for name in names:
            parts.append((f"{SHORT_NAMES[name] if short else name} ", MUTED))
            if cells:
                parts += [(bar(result.raw[name], cells), "$text-success"), " "]
            parts.append((f"{share(result.signals.get(name, 0.0))} ", MUTED))
        line = Content.assemble(*parts).rstrip()
        if line.cell_length <= width:
            return line
    return Content.styled("    " + fit(line.plain.strip(), width - 4), MUTED)


def result_prompt(result: Any, width: int = 80) -> Content:
    """Up to six lines within ``width`` cells: rank, id and score; where it is; the signal bars;
    two lines of snippet; the entity hits."""
    width = max(MIN_WIDTH, width)
    head = Content.assemble((f"{result.rank:>2}. ", MUTED), (fit(result.chunk_id, width - 10), "bold $text-accent"),
                            (f"  {result.score:.2f}", "bold"))
    place = result.document + (f" · {result.breadcrumb}" if result.breadcrumb else "")
    where = Content.styled("    " + fit(place, width - 4), MUTED)
    signals = signal_line(result, width)
    cells = width - 4
    text = snippet(result.content or result.context or "", result.terms, 2 * cells - 8)
    body = Content("\n".join("    " + line for line in wrap(text, cells, 2)))
    pattern = term_pattern(result.terms)
    if pattern is not None:
        body = body.highlight_regex(pattern, style=TERM_STYLE)
    lines = [head, where, signals, body]
    if result.entities:
        hits = []
        for e in result.entities[:4]:
            how = f"“{e.matched}”" if e.matched else (e.via or "")
            hits.append(f"{e.name} ({how})" if how else e.name)
        more = f" +{len(result.entities) - 4}" if len(result.entities) > 4 else ""
        lines.append(Content.assemble(("    entities ", MUTED), (fit("; ".join(hits) + more, width - 13), "$text-primary")))
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
        self._width = 0
        self.border_title = "Results"

    def show_answer(self, answer: Any | None, note: str = "") -> None:
        """Render ``answer`` (core.retrieval.query.Answer), or ``note`` when there is none."""
        self.results = list(answer.results) if answer is not None else []
        self.clear_options()
        if self.results:
            self._render_results()
            self.highlighted = 0
        else:
            self.add_option(Option(Content.styled(note or "No chunk matches.", MUTED), disabled=True))
        if answer is not None:
            extra = f" · translated: {answer.translated}" if answer.translated else ""
            self.border_subtitle = f"{len(self.results)} · {answer.seconds * 1000:.0f} ms{extra}"
        else:
            self.border_subtitle = ""

    def _render_results(self) -> None:
        keep = self.highlighted
        self.clear_options()
        self._width = self.scrollable_content_region.width or 80
        self.add_options([Option(result_prompt(r, self._width - 1), id=r.key) for r in self.results])
        if keep is not None and keep < len(self.results):
            self.highlighted = keep

    def on_resize(self) -> None:
        if self.results and self.scrollable_content_region.width != self._width:
            self._render_results()  # the lines are cut to the width

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        i = event.option_index
        if 0 <= i < len(self.results):
            r = self.results[i]
            self.post_message(self.ChunkChosen(r.key, r.document, r.chunk_id))
