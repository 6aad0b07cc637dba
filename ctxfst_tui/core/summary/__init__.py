"""Summary trees for novels: scene → chapter → book, built by a (small, local) model.

* :mod:`.segment` — a manuscript becomes a tree (Gutenberg boilerplate stripped, parts,
  chapters in English and Portuguese, contents entries ignored, scenes from markers or
  paragraph groups; every word in exactly one scene).
* :mod:`.tree` — :class:`Node` / :class:`Manuscript`, the outline (text and JSON) and the
  Markdown rendering.
* :mod:`.summarizer` — recursive, context-aware summaries with a dynamic tree when inputs
  exceed the context window, a quality gate with one retry, hashes for incremental runs.
* :mod:`.extractive` — the stand-in when both answers are rejected: the node's own most
  informative sentences (TF-IDF and names), so no summary is ever empty.
* :mod:`.refresh` — after an edit: the stale scenes and their ancestors a re-summary visits.
* :mod:`.store` — ``NOVEL.summary.json`` beside the manuscript; :mod:`.session` ties a
  manuscript, its store and a run together (``ctxfst-tui summarize`` is ``ctxfst_tui.cli.summary``).
"""
from ctxfst_tui.core.summary.segment import SegmentError, SegmentSettings, load_manuscript, segment
from ctxfst_tui.core.summary.refresh import RefreshPlan, refresh_plan, refresh_scope
from ctxfst_tui.core.summary.session import NovelSession
from ctxfst_tui.core.summary.store import StoreError, apply_stored, load_store, save_store, store_path
from ctxfst_tui.core.summary.summarizer import CallRecord, Summarizer, SummaryProgress, SummaryReport, SummarySettings, summarize
from ctxfst_tui.core.summary.tree import STATUSES, Manuscript, Node, markdown_outline, outline_text

__all__ = [
    "SegmentError", "SegmentSettings", "load_manuscript", "segment", "NovelSession", "StoreError", "apply_stored",
    "load_store", "save_store", "store_path", "CallRecord", "Summarizer", "SummaryProgress", "SummaryReport",
    "SummarySettings", "summarize", "RefreshPlan", "refresh_plan", "refresh_scope", "STATUSES", "Manuscript", "Node", "markdown_outline", "outline_text",
]
