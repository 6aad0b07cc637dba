"""Recursive summaries: scenes, then chapters from their scenes, parts and the book from chapters.

Level 1 — every scene is summarized from its text plus the last ``context_sentences``
sentences of the previous scene (continuity across the border). Level 2/3 — a chapter
(part, book) is *merged* from its children's summaries in order, each shown between the
child's first and last sentences from the source (context-aware merging, Ou & Lapata 2025).
A single child is copied up without a model call.

Context window: every prompt is measured with the backend's own ``count_tokens`` and must
leave ``max_tokens`` (the level's word limit × ``tokens_per_word``) free. A merge whose
inputs do not fit is done in groups of consecutive children that fit, whose summaries are
merged in turn (a dynamic tree, recorded in ``node.groups``); a scene too long for the
window is summarized in pieces cut between paragraphs (or sentences) and the pieces merged.
Nothing is truncated.

Quality gate (:func:`~.prompts.check_answer`): empty answers, echoes of the source or of the
prompt, and answers over the word limit are retried once with a tighter prompt; a second
failure is flagged on the node: an over-limit answer is then kept cut to the limit at a
sentence boundary; a merge whose children have summaries joins them (``merge_fallback``);
otherwise the node gets an *extractive* summary (``extractive_fallback``, :mod:`.extractive`):
its own most informative sentences, names kept, within the word limit, in source order — a
``done`` node with ``extractive`` set and a flag saying so. Its parent merges it like any
summary, so summaries are never empty; ``failed`` is left for a node with no text at all (or
with the stand-in turned off). ``SummaryReport.extractive`` counts them.

Incremental: each node's ``input_hash`` covers everything its prompt is made from (text,
context, children's summaries and extracts, limits, prompt version, model). A node whose
hash is found among the results of an earlier run (``previous``) is reused without a call,
so after one scene is edited a run makes exactly three calls (scene, chapter, book), and a
cancelled run resumes where it stopped.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ctxfst_tui.core.llm.base import Cancelled, ContextOverflow, ModelError
from ctxfst_tui.core.summary.extractive import extractive_summary
from ctxfst_tui.core.summary.refresh import refresh_scope
from ctxfst_tui.core.summary.prompts import (PROMPT_VERSION, MergeItem, Prompt, Verdict, check_answer, context_before, joined_summaries,
                      merge_prompt, scene_prompt, subject_of)
from ctxfst_tui.core.summary.text import first_sentences, last_sentences, lower_vocabulary, sha
from ctxfst_tui.core.summary.tree import Manuscript, Node
from ctxfst_tui.core.text.sentences import sentence_spans
from ctxfst_tui.core.text.words import count_words, one_line

TOKEN_MARGIN = 48  # tokens kept free beyond the prompt and the output (chat templates, BOS)


@dataclass
class SummarySettings:
    scene_words: int = 150
    chapter_words: int = 300
    part_words: int = 500
    book_words: int = 500
    context_sentences: int = 2  # of the previous scene, in each scene prompt
    extract_sentences: int = 1  # opening / closing sentences of each child, in merge prompts
    style: str = "auto"  # auto | fewshot | instruct
    temperature: float = 0.0
    tokens_per_word: float = 1.6  # max_tokens of a call = limit × this + 16
    retry: bool = True
    ground_names: bool = True  # drop summary sentences naming people absent from the source
    echo_threshold: float = 0.6
    max_chapters: int | None = None  # summarize only the first N chapters (and the book from them)
    merge_fallback: bool = True  # a merge rejected twice: join the children's summaries instead (flagged)
    subject_prefix: bool = True  # few-shot answers start with the main character ("The narrator", "Mrs. Bennet")
    extractive_fallback: bool = True  # both answers rejected: the node's own sentences instead of no summary (flagged)

    def limit(self, kind: str) -> int:
        return {"scene": self.scene_words, "chapter": self.chapter_words, "part": self.part_words,
                "book": self.book_words}.get(kind, self.chapter_words)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def hash_params(self, style: str) -> dict[str, Any]:
        params = {"v": PROMPT_VERSION, "style": style, "temperature": self.temperature, "tpw": self.tokens_per_word,
                  "retry": self.retry, "ground": self.ground_names, "echo": self.echo_threshold,
                  "ctx": self.context_sentences, "extract": self.extract_sentences,
                  "fallback": self.merge_fallback, "subject": self.subject_prefix}
        if not self.extractive_fallback:  # only when off, so the hashes of stores made before it stay valid
            params["extractive"] = False
        return params


@dataclass
class CallRecord:
    """One model call: for the benchmark and the log."""

    node: str
    kind: str  # scene | chapter | part | book | group | piece | baseline
    attempt: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool
    finish_reason: str
    raw: str
    text: str
    reason: str = ""
    category: str = ""
    dropped: int = 0


@dataclass
class SummaryProgress:
    """Sent when a node starts (``status == "running"``) and when it ends."""

    index: int  # 1-based position of the node in this run
    total: int
    node_id: str
    title: str
    kind: str
    status: str
    elapsed: float
    eta: float | None  # seconds, estimated from the calls made so far
    model_calls: int
    cache_hits: int
    reused: int
    extractive: bool = False  # the node ended with an extractive summary


ProgressCallback = Callable[[SummaryProgress], None]
NodeCallback = Callable[[Node], None]


@dataclass
class SummaryReport:
    nodes: int = 0
    model_calls: int = 0
    cache_hits: int = 0
    failed: int = 0
    extractive: int = 0  # nodes of the run whose summary is extractive (computed now or reused)
    reused: int = 0
    computed: int = 0
    cancelled: bool = False
    error: str = ""
    elapsed: float = 0.0
    calls: list[CallRecord] = field(default_factory=list)

    def counts_line(self) -> str:
        """``nodes N, model calls N, cache hits N, failed N`` and, when some are, ``, extractive N``."""
        line = f"nodes {self.nodes}, model calls {self.model_calls}, cache hits {self.cache_hits}, failed {self.failed}"
        return line + (f", extractive {self.extractive}" if self.extractive else "")

    def to_json(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "model_calls": self.model_calls, "cache_hits": self.cache_hits,
                "failed": self.failed, "extractive": self.extractive, "reused": self.reused, "computed": self.computed,
                "cancelled": self.cancelled, "error": self.error, "elapsed": round(self.elapsed, 3)}


class _Stop(Exception):
    """Internal: the run stops (cancel or a fatal model error)."""


def resolve_style(backend: Any, style: str) -> str:
    if style in ("fewshot", "instruct"):
        return style
    try:
        return "instruct" if getattr(backend, "chat", False) else "fewshot"
    except ModelError:
        return "fewshot"


def memo_from_tree(tree: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """input hash → stored result, for every done node (and merge group) of a stored tree."""
    memo: dict[str, dict[str, Any]] = {}

    def rec(d: dict[str, Any]) -> None:
        h = d.get("input_hash")
        if h and d.get("status") == "done" and isinstance(d.get("summary"), str):
            memo[h] = {"summary": d["summary"], "flags": list(d.get("flags") or []), "groups": d.get("groups") or [],
                       "extractive": d.get("extractive") is True}
        for g in d.get("groups") or []:
            if g.get("hash") and g.get("status") == "done" and isinstance(g.get("summary"), str):
                memo[g["hash"]] = {"summary": g["summary"], "flags": list(g.get("flags") or []), "groups": [],
                                   "extractive": g.get("extractive") is True}
        for c in d.get("children") or []:
            if isinstance(c, dict):
                rec(c)

    if isinstance(tree, dict):
        rec(tree)
    return memo


class Summarizer:
    """Summarizes a :class:`Manuscript` tree in place with ``backend`` (see the module doc)."""

    def __init__(self, backend: Any, settings: SummarySettings | None = None):
        self.backend = backend
        self.settings = settings or SummarySettings()
        self.style = resolve_style(backend, self.settings.style)
        try:
            self.model_id = str(backend.model_id)
        except ModelError:
            raise
        except Exception:  # pragma: no cover - a backend without a model id
            self.model_id = getattr(backend, "name", "model")
        self.context_size = int(getattr(backend, "context_size", 4096) or 4096)

    # ------------------------------------------------------------ scope
    def scope(self, ms: Manuscript, only: str | None = None) -> list[Node]:
        """The nodes a run visits, children before parents."""
        root = ms.root
        if only:
            target = root.find(only)
            if target is None:
                raise KeyError(only)
            nodes = [n for n in target.post_order() if not n.front_matter]
            return nodes
        allowed: set[int] | None = None
        chapters = root.chapters()
        if self.settings.max_chapters is not None and self.settings.max_chapters < len(chapters):
            keep = chapters[: max(0, self.settings.max_chapters)]
            allowed = set()
            for ch in keep:
                allowed.update(id(n) for n in ch.walk())
            # parts holding a kept chapter, and the book; scenes directly under book/parts before the last kept chapter
            last_end = keep[-1].end if keep else root.start
            for n in root.walk():
                if n.kind in ("part",) and any(id(c) in allowed for c in n.walk() if c is not n):
                    allowed.add(id(n))
                if n.kind == "scene" and n.end <= last_end and not n.id.startswith("c"):
                    allowed.add(id(n))
            allowed.add(id(root))
        out = []
        for n in root.post_order():
            if n.front_matter:
                continue
            if allowed is not None and id(n) not in allowed:
                continue
            out.append(n)
        return out

    def _children_in_scope(self, node: Node, in_scope: set[int] | None) -> list[Node]:
        kids = [c for c in node.children if not c.front_matter]
        if in_scope is not None:
            kids = [c for c in kids if id(c) in in_scope]
        return kids

    # ------------------------------------------------------------ run
    def run(self, ms: Manuscript, *, previous: dict[str, Any] | None = None, only: str | None = None,
            cancel: threading.Event | None = None, progress: ProgressCallback | None = None,
            on_node: NodeCallback | None = None, checkpoint: Callable[[], None] | None = None,
            stale: bool = False) -> SummaryReport:
        """Summarize the nodes of ``ms`` (or the subtree ``only``); ``previous`` is a stored tree (or its memo).

        ``stale``: only what edits made stale (:func:`~.refresh.refresh_scope`, the re-summary after a
        save); a merge then takes the children that have a summary or are visited, as the stored tree did."""
        if stale and only:
            raise ValueError("a re-summary of stale nodes covers the whole tree; it takes no node")
        t0 = time.perf_counter()
        report = SummaryReport()
        self._cancel = cancel
        self._book = ms.root.title
        self._known = tuple(w.strip(".,;:!?()'\"") for w in ms.root.title.split() if w[:1].isupper())
        self._parents = {id(c): n for n in ms.root.walk() for c in n.children}
        memo = previous if (isinstance(previous, dict) and previous.get("__memo__")) else memo_from_tree(previous)
        if stale:
            nodes = refresh_scope(ms)
            in_scope = {id(n) for n in nodes}
            restrict: set[int] | None = in_scope | {id(n) for n in ms.root.walk() if n.status != "pending"}
        else:
            nodes = self.scope(ms, only)
            in_scope = {id(n) for n in nodes}
            restrict = in_scope if (self.settings.max_chapters is not None and not only) else None
        report.nodes = len(nodes)
        scenes_all = [s for s in ms.root.scenes() if not s.front_matter]
        prev_of = {id(s): (scenes_all[i - 1] if i > 0 else None) for i, s in enumerate(scenes_all)}
        self._vocab_cache: dict[int, set[str]] = {}
        predicted = self._predict_reuse(ms, nodes, memo, prev_of, restrict)
        remaining_work = sum(1 for n in nodes if id(n) not in predicted)
        compute_seconds = 0.0
        for n in nodes:
            if n.status == "running":
                n.status = "pending"
        for index, node in enumerate(nodes, 1):
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                break
            node.status = "running"
            if progress:
                progress(self._progress(index, len(nodes), node, t0, report, compute_seconds, remaining_work))
            calls_before = report.model_calls
            t_node = time.perf_counter()
            try:
                if node.kind == "scene":
                    self._do_scene(ms, node, prev_of.get(id(node)), memo, report)
                else:
                    self._do_merge(ms, node, self._children_in_scope(node, restrict), memo, report)
            except Cancelled:
                node.status = "pending"
                report.cancelled = True
                break
            except KeyboardInterrupt:
                node.status = "pending"
                report.cancelled = True
                break
            except _Stop as exc:
                node.status = "pending"
                report.error = str(exc)
                break
            dt = time.perf_counter() - t_node
            if node.stats.get("reused") is not True:
                report.computed += 1
                compute_seconds += dt
            if id(node) not in predicted:
                remaining_work = max(0, remaining_work - 1)
            if node.status == "failed":
                report.failed += 1
            elif node.status == "done" and node.extractive:
                report.extractive += 1
            if on_node:
                on_node(node)
            if progress:
                progress(self._progress(index, len(nodes), node, t0, report, compute_seconds, remaining_work))
            if checkpoint and report.model_calls > calls_before:
                checkpoint()
        report.elapsed = time.perf_counter() - t0
        if checkpoint:
            checkpoint()
        return report

    def _progress(self, index: int, total: int, node: Node, t0: float, report: SummaryReport, compute_seconds: float,
                  remaining_work: int) -> SummaryProgress:
        eta = None
        if report.computed:
            eta = compute_seconds / report.computed * remaining_work
        return SummaryProgress(index, total, node.id, node.title, node.kind, node.status, time.perf_counter() - t0, eta,
                               report.model_calls, report.cache_hits, report.reused,
                               node.status == "done" and node.extractive)

    def _predict_reuse(self, ms: Manuscript, nodes: list[Node], memo: dict, prev_of: dict, restrict) -> set[int]:
        """Nodes expected to be reused (for the ETA): scenes whose hash is known, parents of only such scenes."""
        ok: set[int] = set()
        for n in nodes:
            if n.kind == "scene":
                if self._scene_hash(ms, n, prev_of.get(id(n))) in memo:
                    ok.add(id(n))
            else:
                kids = self._children_in_scope(n, restrict)
                if kids and all(id(k) in ok for k in kids) and n.input_hash and n.input_hash in memo:
                    ok.add(id(n))
        return ok

    # ------------------------------------------------------------ hashes
    def _base(self, kind: str) -> dict[str, Any]:
        return {"kind": kind, "limit": self.settings.limit(kind), "model": self.model_id,
                "params": self.settings.hash_params(self.style)}

    def _scene_hash(self, ms: Manuscript, node: Node, prev: Node | None) -> str:
        before = context_before(ms.node_text(prev), self.settings.context_sentences) if prev is not None else ""
        return sha({**self._base("scene"), "text": ms.node_text(node), "before": before,
                    "book": ms.root.title, "where": self._where(ms, node)})

    def _where(self, ms: Manuscript, node: Node) -> str:
        parents = getattr(self, "_parents", None)
        if parents is None:
            parents = self._parents = {id(c): n for n in ms.root.walk() for c in n.children}
        p = parents.get(id(node))
        if p is not None and p.kind != "book":
            return f"{p.title}, {node.title}"
        return node.title

    def _vocab(self, node: Node, source: str) -> set[str]:
        v = self._vocab_cache.get(id(node))
        if v is None:
            v = lower_vocabulary(source)
            self._vocab_cache[id(node)] = v
        return v

    # ------------------------------------------------------------ scenes
    def _fits(self, prompt: Prompt) -> bool:
        return self.backend.count_tokens(prompt.text) + prompt.max_tokens + TOKEN_MARGIN <= self.context_size

    def _do_scene(self, ms: Manuscript, node: Node, prev: Node | None, memo: dict, report: SummaryReport) -> None:
        text = ms.node_text(node)
        before = context_before(ms.node_text(prev), self.settings.context_sentences) if prev is not None else ""
        node.input_hash = self._scene_hash(ms, node, prev)
        if self._reuse(node, memo, report):
            return
        node.groups = []
        node.flags = []
        node.rejected = []
        node.stats = {}
        node.extractive = False
        limit = self.settings.limit("scene")
        where = self._where(ms, node)
        source = before + "\n" + text
        vocab = self._vocab(node, source)
        make = lambda t, b, tight=False: scene_prompt(t, b, limit=limit, style=self.style,  # noqa: E731
                                                      tokens_per_word=self.settings.tokens_per_word, tight=tight,
                                                      book=ms.root.title, where=where,
                                                      subject=self.settings.subject_prefix)
        if self._fits(make(text, before)):
            summary, flags, rejected, ok = self._generate(node.id, "scene", lambda tight: make(text, before, tight),
                                                          limit, source, source, vocab, report)
            self._finish(node, summary, flags, rejected, ok, stand_in=(text, "scene"))
            return
        else:
            # too long for the window: summarize pieces that fit, then merge them
            pieces = self._split_to_fit(text, lambda t: make(t, before))
            items: list[MergeItem] = []
            prev_piece = before
            flags = []
            for j, piece in enumerate(pieces, 1):
                ghash = sha({**self._base("scene"), "piece": piece, "before": prev_piece})
                got = self._group_memo(ghash, memo)
                if got is None:
                    s, fl, rej, okp = self._generate(f"{node.id}~{j}", "piece", lambda tight, p=piece, b=prev_piece: make(p, b, tight),
                                                     limit, source, piece + "\n" + prev_piece, vocab, report)
                    got = {"hash": ghash, "kind": "piece", "summary": s if okp else None, "flags": fl,
                           "status": "done" if okp else "failed", "words": count_words(piece)}
                    ext = None if okp or not self.settings.extractive_fallback else extractive_summary(piece, limit)
                    if ext is not None:
                        got.update(summary=ext.text, status="done", extractive=True, flags=fl + [ext.describe("piece")])
                node.groups.append(got)
                items.append(MergeItem(f"Part {j}", got.get("summary"), first_sentences(piece, 1), last_sentences(piece, 1)))
                prev_piece = context_before(piece, self.settings.context_sentences)
            flags.append(f"summarized in {len(pieces)} pieces (longer than the context window)")
            summary, fl2, rejected, ok = self._merge_items(node, items, "scene", "part", node.title, limit, source,
                                                           vocab, memo, report)
            flags += fl2
        self._finish(node, summary, flags, rejected, ok, stand_in=(text, "scene"))

    def _split_to_fit(self, text: str, make: Callable[[str], Prompt]) -> list[str]:
        """Cut ``text`` between paragraphs (sentences, words as a last resort) into pieces whose prompts fit."""
        overhead = self.backend.count_tokens(make("").text)
        budget = self.context_size - overhead - make("").max_tokens - TOKEN_MARGIN
        if budget < 32:
            raise _Stop(f"the context window ({self.context_size} tokens) is too small for a scene prompt")
        units: list[str] = []
        for para in [p for p in text.split("\n\n") if p.strip()]:
            if self.backend.count_tokens(para) <= budget:
                units.append(para)
                continue
            for a, b in sentence_spans(para):
                sent = para[a:b]
                if self.backend.count_tokens(sent) <= budget:
                    units.append(sent)
                    continue
                ws = sent.split()
                step = max(8, int(budget / 2))  # a sentence longer than the window: word windows
                for k in range(0, len(ws), step):
                    units.append(" ".join(ws[k:k + step]))
        pieces: list[str] = []
        cur: list[str] = []
        cur_tokens = 0
        for u in units:
            t = self.backend.count_tokens(u) + 2
            if cur and cur_tokens + t > budget:
                pieces.append("\n\n".join(cur))
                cur, cur_tokens = [], 0
            cur.append(u)
            cur_tokens += t
        if cur:
            pieces.append("\n\n".join(cur))
        return pieces

    # ------------------------------------------------------------ merges
    def _items_for(self, ms: Manuscript, kids: list[Node]) -> list[MergeItem]:
        items = []
        n = self.settings.extract_sentences
        for k in kids:
            src = ms.source_text(k)
            label = k.title if k.kind != "scene" else k.title
            items.append(MergeItem(label, k.summary if k.status == "done" and k.summary else None,
                                   first_sentences(src, n), last_sentences(src, n)))
        return items

    def _do_merge(self, ms: Manuscript, node: Node, kids: list[Node], memo: dict, report: SummaryReport) -> None:
        items = self._items_for(ms, kids)
        kind = node.kind
        limit = self.settings.limit(kind)
        node.input_hash = sha({**self._base(kind), "title": node.title, "book": ms.root.title,
                               "items": [[i.label, i.summary, i.opening, i.closing] for i in items]})
        if self._reuse(node, memo, report):
            return
        node.groups = []
        node.flags = []
        node.rejected = []
        node.stats = {}
        node.extractive = False
        flags: list[str] = []
        total_kids = [c for c in node.children if not c.front_matter]
        if len(kids) < len(total_kids):
            flags.append(f"covers {len(kids)} of {len(total_kids)} {self._child_word(kids or total_kids)}s")
        missing = [k.id for k in kids if not (k.status == "done" and k.summary)]
        if missing:
            flags.append("built without the summaries of " + ", ".join(missing))
        if not kids:
            self._finish(node, None, flags + ["nothing to summarize"], [], False)
            return
        if len(kids) == 1 and kids[0].summary and kids[0].status == "done":
            # one child: its summary is the parent's (no model call)
            summary = kids[0].summary
            node.stats = {"copied_from": kids[0].id}
            self._finish(node, summary, flags + list(kids[0].flags), [], True)
            node.extractive = kids[0].extractive
            return
        source = ms.source_text(node) if not self.settings.max_chapters else "\n\n".join(ms.source_text(k) for k in kids)
        vocab = self._vocab(node, source)
        summary, fl, rejected, ok = self._merge_items(node, items, kind, self._child_word(kids), node.title, limit, source,
                                                      vocab, memo, report)
        self._finish(node, summary, flags + fl, rejected, ok, stand_in=(source, kind))

    @staticmethod
    def _child_word(kids: list[Node]) -> str:
        kinds = {k.kind for k in kids}
        if kinds == {"scene"}:
            return "scene"
        if kinds == {"chapter"} or kinds == {"chapter", "scene"}:
            return "chapter"
        if "part" in kinds:
            return "part"
        return "section"

    def _merge_items(self, node: Node, items: list[MergeItem], parent: str, child: str, title: str, limit: int,
                     source: str, vocab: set[str], memo: dict, report: SummaryReport
                     ) -> tuple[str | None, list[str], list[str], bool]:
        """Merge ``items`` into one summary, in groups that fit the window when they all do not (recursively)."""
        subject = subject_of(source) if (self.settings.subject_prefix and self.style == "fewshot") else ""
        make = lambda its, tight=False: merge_prompt(its, parent=parent, child=child, title=title, limit=limit,  # noqa: E731
                                                     style=self.style, tokens_per_word=self.settings.tokens_per_word,
                                                     tight=tight, book=self._book, subject=subject)
        flags: list[str] = []
        rounds = 0
        while not self._fits(make(items)):
            rounds += 1
            groups: list[list[MergeItem]] = []
            cur: list[MergeItem] = []
            for it in items:
                if cur and not self._fits(make(cur + [it])):
                    groups.append(cur)
                    cur = []
                cur.append(it)
            if cur:
                groups.append(cur)
            if len(groups) >= len(items):
                raise _Stop(f"the context window ({self.context_size} tokens) is too small to merge two "
                            f"{child} summaries of {node.id}; raise --n-ctx or lower the word limits")
            new_items = []
            for g_index, g in enumerate(groups, 1):
                if len(g) == 1:
                    new_items.append(g[0])
                    continue
                ghash = sha({**self._base(parent), "group": [[i.label, i.summary, i.opening, i.closing] for i in g]})
                got = self._group_memo(ghash, memo)
                if got is None:
                    s, fl, rej, ok = self._merge_call(f"{node.id}~r{rounds}g{g_index}", "group", g, make, limit, source,
                                                      vocab, report)
                    got = {"hash": ghash, "kind": "group", "round": rounds, "items": [i.label for i in g],
                           "summary": s if ok else None, "flags": fl, "status": "done" if ok else "failed"}
                node.groups.append(got)
                label = f"{g[0].label} to {g[-1].label}"
                new_items.append(MergeItem(label, got.get("summary"), g[0].opening, g[-1].closing))
            items = new_items
        if rounds:
            flags.append(f"merged in {rounds} extra round{'s' if rounds > 1 else ''} of groups (inputs longer than the context window)")
        summary, fl, rejected, ok = self._merge_call(node.id, parent, items, make, limit, source, vocab, report)
        return summary, flags + fl, rejected, ok

    def _merge_call(self, node_id: str, kind: str, items: list[MergeItem], make: Callable[..., Prompt], limit: int,
                    source: str, vocab: set[str], report: SummaryReport) -> tuple[str | None, list[str], list[str], bool]:
        ref = "\n".join(i.opening + "\n" + i.closing for i in items)
        children = [i.summary or "" for i in items]
        summary, flags, rejected, ok = self._generate(node_id, kind, lambda tight: make(items, tight), limit, source,
                                                      ref, vocab, report, children=children)
        if not ok and self.settings.merge_fallback and any(children):
            joined = joined_summaries(children, limit)
            if joined:
                return joined, flags + ["made by joining the child summaries (the model's merges were rejected)"], rejected, True
        return summary, flags, rejected, ok

    @staticmethod
    def _group_memo(ghash: str, memo: dict) -> dict[str, Any] | None:
        got = memo.get(ghash)
        if got is None:
            return None
        out = {"hash": ghash, "summary": got["summary"], "flags": list(got.get("flags") or []), "status": "done",
               "reused": True}
        if got.get("extractive"):
            out["extractive"] = True
        return out

    # ------------------------------------------------------------ calls and the gate
    def _call(self, prompt: Prompt, report: SummaryReport):
        try:
            return self.backend.complete(prompt.text, max_tokens=prompt.max_tokens, stop=prompt.stop or None,
                                         temperature=self.settings.temperature, cancel=self._cancel)
        except (Cancelled, KeyboardInterrupt):
            raise
        except ContextOverflow as exc:
            return exc
        except ModelError as exc:
            raise _Stop(str(exc)) from exc

    _cancel: threading.Event | None = None
    _book: str = ""
    _known: tuple[str, ...] = ()

    def _generate(self, node_id: str, kind: str, make: Callable[[bool], Prompt], limit: int, source: str,
                  echo_ref: str, vocab: set[str], report: SummaryReport, children: list[str] | None = None
                  ) -> tuple[str | None, list[str], list[str], bool]:
        """Ask, judge, retry once: (summary, flags, rejected texts, ok)."""
        verdicts: list[Verdict] = []
        rejected: list[str] = []
        attempts = 2 if self.settings.retry else 1
        for attempt in range(attempts):
            prompt = make(attempt > 0)
            result = self._call(prompt, report)
            if isinstance(result, ContextOverflow):
                return None, [f"context overflow: {result}"], rejected, False
            if result.cached:
                report.cache_hits += 1
            else:
                report.model_calls += 1
            v = check_answer(result.text, prompt=prompt, source=source, echo_reference=echo_ref, limit=limit,
                             finish_reason=result.finish_reason, ground_names=self.settings.ground_names,
                             source_vocab=vocab, echo_threshold=self.settings.echo_threshold, known=self._known,
                             children=children)
            report.calls.append(CallRecord(node_id, kind, attempt + 1, result.prompt_tokens, result.completion_tokens,
                                           result.seconds, result.cached, result.finish_reason, result.text, v.text,
                                           v.reason, v.category, len(v.dropped)))
            verdicts.append(v)
            flags = []
            if v.dropped:
                flags.append(f"dropped {len(v.dropped)} sentence{'s' if len(v.dropped) > 1 else ''} naming people absent from the source")
            if v.ok:
                if attempt:
                    flags.insert(0, f"retried: {verdicts[0].reason}")
                return v.text, flags, rejected, True
            rejected.append(one_line(result.text)[:600])
        # both attempts rejected: keep an over-limit answer cut to the limit, else fail
        for v in verdicts:
            if v.category == "over_limit" and v.trimmed:
                return v.trimmed, [f"over the limit after a retry: {v.reason}; cut to the limit"], rejected, True
        reasons = "; ".join(dict.fromkeys(v.reason for v in verdicts))
        return None, [f"rejected: {reasons}"], rejected, False

    def _reuse(self, node: Node, memo: dict, report: SummaryReport) -> bool:
        got = memo.get(node.input_hash)
        if got is None:
            return False
        node.summary = got["summary"]
        node.flags = list(got.get("flags") or [])
        node.groups = [dict(g) for g in got.get("groups") or []]
        node.status = "done"
        node.extractive = bool(got.get("extractive"))
        node.rejected = []
        node.stats = {"reused": True}
        report.reused += 1
        return True

    def _finish(self, node: Node, summary: str | None, flags: list[str], rejected: list[str], ok: bool,
                stand_in: tuple[str, str] | None = None) -> None:
        """Store the outcome; ``stand_in`` (source text, what it is): the text an extractive summary is
        taken from when the model gave none (``extractive_fallback``)."""
        node.extractive = False
        if not ok and stand_in is not None and self.settings.extractive_fallback:
            ext = extractive_summary(stand_in[0], self.settings.limit(node.kind))
            if ext is not None:
                summary, ok = ext.text, True
                flags = flags + [ext.describe(stand_in[1])]
                node.extractive = True
                node.stats = {**node.stats, "extractive": {"sentences": ext.chosen, "of": ext.of,
                                                           "names": ext.names}}
        node.summary = summary if ok else None
        node.flags = flags
        node.rejected = rejected
        node.status = "done" if ok else "failed"


def summarize(ms: Manuscript, backend: Any, settings: SummarySettings | None = None, **kw: Any) -> SummaryReport:
    """Shortcut: ``Summarizer(backend, settings).run(ms, **kw)``."""
    return Summarizer(backend, settings).run(ms, **kw)
