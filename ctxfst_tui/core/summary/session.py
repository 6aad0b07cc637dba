"""One novel and its summary store: what the CLI and the workbench pane work with.

    session = NovelSession.open("novel.txt")            # segment, read novel.summary.json, mark stale nodes
    report = session.summarize(backend, SummarySettings(), cancel=event, progress=cb, on_node=cb)
    report = session.summarize(backend, stale=True)          # after an edit: the stale scenes and their ancestors
    print(report.counts_line())                         # nodes N, model calls N, cache hits N, failed N

``summarize`` saves the store as it goes (at most every ``save_every`` seconds, and when the
run ends, is cancelled or fails), so a cancelled run resumes where it stopped.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxfst_tui.core.llm.base import ModelError
from ctxfst_tui.core.summary.segment import SegmentSettings, load_manuscript
from ctxfst_tui.core.summary.store import apply_stored, load_store, save_store, store_document, store_path
from ctxfst_tui.core.summary.summarizer import NodeCallback, ProgressCallback, Summarizer, SummaryReport, SummarySettings, memo_from_tree
from ctxfst_tui.core.summary.tree import Manuscript


def model_info(backend: Any, style: str = "") -> dict[str, Any]:
    inner = getattr(backend, "inner", backend)
    out: dict[str, Any] = {"backend": getattr(inner, "name", "?")}
    try:
        out["model_id"] = backend.model_id
    except (ModelError, AttributeError):
        pass
    path = getattr(inner, "model_path", None)
    if path is not None:
        out["model"] = str(path)
    elif getattr(inner, "model", None):
        out["model"] = str(getattr(inner, "model"))
    if getattr(inner, "bundled", False):
        out["model"] = "bundled Gemma 3 270M"
    try:
        out["context_size"] = int(backend.context_size)
    except Exception:  # pragma: no cover
        pass
    if style:
        out["prompt_style"] = style
    return out


@dataclass
class NovelSession:
    path: Path
    manuscript: Manuscript
    store: Path
    stored: dict[str, Any] | None = None
    segment_settings: SegmentSettings = field(default_factory=SegmentSettings)
    save_every: float = 2.0
    last_report: SummaryReport | None = None

    @classmethod
    def open(cls, path: str | Path, *, store: str | Path | None = None,
             segment_settings: SegmentSettings | None = None) -> "NovelSession":
        p = Path(path)
        seg = segment_settings or SegmentSettings()
        ms = load_manuscript(p, seg)
        sp = store_path(p, store)
        stored = load_store(sp)
        apply_stored(ms, stored.get("tree") if stored else None)
        return cls(p, ms, sp, stored, seg)

    def reload(self) -> None:
        """Re-read and re-segment the manuscript (after it was edited); stale nodes are marked."""
        self.manuscript = load_manuscript(self.path, self.segment_settings)
        self.stored = load_store(self.store)
        apply_stored(self.manuscript, self.stored.get("tree") if self.stored else None)

    def document(self, backend: Any = None, settings: SummarySettings | None = None, style: str = "",
                 report: SummaryReport | None = None) -> dict[str, Any]:
        model = model_info(backend, style) if backend is not None else (self.stored or {}).get("model", {})
        params = {"summary": (settings or SummarySettings()).to_json(), "segmentation": self.segment_settings.to_json()}
        return store_document(self.manuscript, model=model, parameters=params,
                              counts=report.to_json() if report else None)

    def summarize(self, backend: Any, settings: SummarySettings | None = None, *, only: str | None = None,
                  cancel: threading.Event | None = None, progress: ProgressCallback | None = None,
                  on_node: NodeCallback | None = None, save: bool = True, stale: bool = False) -> SummaryReport:
        """Summarize the book, the subtree ``only``, or (``stale``) only what edits made stale."""
        settings = settings or SummarySettings()
        summarizer = Summarizer(backend, settings)
        memo = memo_from_tree(self.stored.get("tree") if self.stored else None)
        # results of this session's earlier runs count too (the tree in memory)
        memo.update(memo_from_tree(self.manuscript.root.to_json()))
        memo["__memo__"] = True
        last_save = [time.monotonic()]

        def checkpoint(force: bool = False) -> None:
            if not save:
                return
            now = time.monotonic()
            if force or now - last_save[0] >= self.save_every:
                doc = self.document(backend, settings, summarizer.style)
                save_store(self.store, doc)
                self.stored = doc
                last_save[0] = now

        report = summarizer.run(self.manuscript, previous=memo, only=only, cancel=cancel, progress=progress,
                                on_node=on_node, checkpoint=lambda: checkpoint(False), stale=stale)
        self.last_report = report
        if save:
            doc = self.document(backend, settings, summarizer.style, report)
            save_store(self.store, doc)
            self.stored = doc
        return report
