"""``index``, ``query`` and ``eval``: the retrieval half of the command line.

``index PATH`` writes (or brings up to date) a LanceDB database beside the documents;
``query PATH "question"`` searches it and says why each chunk came back; ``eval PATH
QUERIES.yaml`` scores every method. A question in another script than the corpus is
translated by the model first (the model options are the model jobs'); ``--no-translate``
searches it as written.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ctxfst_tui.cli.common import CliError, check_path
from ctxfst_tui.cli.model_options import add_model_options
from ctxfst_tui.core.text.plural import count

MODES = ("bm25", "vector", "entity", "hybrid", "auto")
BAR = "▇"


def add_parsers(sub: Any) -> None:
    ix = sub.add_parser("index", help="build or update a LanceDB index of documents (incremental)")
    ix.add_argument("path", help="a CtxFST document, a folder, or a chunks.json / JSONL export")
    _index_options(ix, endpoint_flags=("--endpoint", "--embed-endpoint"))
    ix.set_defaults(func=cmd_index)

    q = sub.add_parser("query", help="search the index and show why each chunk came back")
    q.add_argument("path", help="what was indexed (its index is found beside it, or give --db)")
    q.add_argument("question")
    q.add_argument("--mode", choices=MODES, default="auto", help="auto (default) fuses full-text, vector and entity signals")
    q.add_argument("-k", type=int, default=5, help="results to show (default: 5)")
    q.add_argument("--json", action="store_true", help="print the results as JSON")
    _query_options(q)
    q.set_defaults(func=cmd_query)

    ev = sub.add_parser("eval", help="score retrieval methods against a queries.yaml")
    ev.add_argument("path", help="what was indexed (indexed first when there is no index yet)")
    ev.add_argument("queries", help="queries.yaml: expected_entities (the reference's) or expected_chunks")
    ev.add_argument("-k", type=int, default=3, help="cut-off rank (default: 3)")
    ev.add_argument("--json", action="store_true", help="print the scores as JSON")
    ev.add_argument("--expansions", metavar="FILE",
                    help="the reference's expansion tables for reference-tfidf/-entity: its "
                         "ch22_retrieval_benchmark.py (read, never run) or YAML/JSON {baseline, entity}")
    _query_options(ev)
    ev.set_defaults(func=cmd_eval)


def _index_options(p: argparse.ArgumentParser, endpoint_flags: tuple[str, ...] = ("--embed-endpoint",)) -> None:
    """``index`` takes the embedding server as ``--endpoint``; ``query``/``eval`` keep that flag for
    the model that translates, and read the embedding server from the index."""
    p.add_argument("--db", help="any LanceDB URI (default: a .ctxfst-index folder beside the documents)")
    p.add_argument("--embed", default=None,
                   help="bundled (all-MiniLM-L6-v2), none, gguf:FILE or endpoint; default: the one the index "
                        "was built with (its GGUF path is recorded), bundled for a new index")
    p.add_argument(*endpoint_flags, dest="embed_endpoint",
                   help="with --embed endpoint: an OpenAI-compatible /v1/embeddings server, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--embed-model", help="with --embed endpoint: the served embedding model's name")


def _query_options(p: argparse.ArgumentParser) -> None:
    _index_options(p)
    p.add_argument("--no-translate", action="store_true", help="never translate the question with the model")
    add_model_options(p)


def _uri(args: argparse.Namespace) -> str:
    from ctxfst_tui.core.retrieval.index import default_uri

    return args.db or default_uri(args.path)


def _embedder(args: argparse.Namespace) -> Any:
    """The embedder the options name; without --embed, the one the index was built with."""
    from ctxfst_tui.core.retrieval.bundled_embedder import EmbedderUnavailable
    from ctxfst_tui.core.retrieval.embedders import embedder_for_index, make_embedder
    from ctxfst_tui.core.retrieval.index import IndexError_, index_meta

    try:
        if args.embed is None:
            try:
                meta = index_meta(_uri(args))
            except IndexError_ as exc:
                raise CliError(str(exc)) from None
            return embedder_for_index(meta, endpoint=args.embed_endpoint, model=args.embed_model)
        return make_embedder(args.embed, endpoint=args.embed_endpoint, model=args.embed_model)
    except EmbedderUnavailable as exc:
        raise CliError(f"{_uri(args)}: {exc}" if args.embed is None else str(exc)) from None


def _progress(stage: str, done: int, total: int, _last: list[float] = [0.0]) -> None:
    now = time.monotonic()
    if done == total or now - _last[0] >= 1.0:
        _last[0] = now
        print(f"{stage}: {done}/{total}", file=sys.stderr, flush=True)


def cmd_index(args: argparse.Namespace, report=None) -> int:
    """Index ``args.path``; the one-line report goes to ``report`` (stdout by default: ``eval --json``
    indexing first sends it to stderr, so stdout stays one JSON document)."""
    from ctxfst_tui.core.retrieval.corpus import CorpusError, load_corpus
    from ctxfst_tui.core.retrieval.index import IndexError_, build_index

    check_path(args.path)
    try:
        corpus = load_corpus(args.path)
    except CorpusError as exc:
        raise CliError(str(exc)) from None
    embedder = _embedder(args)
    try:
        stats = build_index(corpus, _uri(args), embedder, progress=_progress if len(corpus.chunks) > 200 else None)
    except IndexError_ as exc:
        raise CliError(str(exc)) from None
    for w in stats.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(stats.one_line(), file=report or sys.stdout)
    return 0


def _searcher(args: argparse.Namespace) -> Any:
    from ctxfst_tui.core.retrieval.index import IndexError_
    from ctxfst_tui.core.retrieval.query import Searcher

    uri = _uri(args)
    try:
        return Searcher(uri, embedder_factory=lambda _recorded: _embedder(args))
    except IndexError_ as exc:
        raise CliError(str(exc)) from None


class _Translator:
    """Translates a question when the corpus is in another script; builds the model only then."""

    def __init__(self, args: argparse.Namespace, searcher: Any):
        self.args, self.searcher, self.backend, self.failed = args, searcher, None, False

    def __call__(self, question: str) -> str | None:
        target = None if self.args.no_translate else self.searcher.translation_target(question)
        if not target or self.failed:
            return None
        from ctxfst_tui.cli.model_options import make_backend_from_args
        from ctxfst_tui.core.llm.base import ModelError
        from ctxfst_tui.core.retrieval.translate import translate

        try:
            if self.backend is None:
                self.backend = make_backend_from_args(self.args)
            return translate(question, target, self.backend)
        except ModelError as exc:
            self.failed = True
            print(f"warning: not translated ({exc}); searching the question as written", file=sys.stderr)
            return None


def _bar(share: float, width: int = 10) -> str:
    return BAR * max(1, round(share * width)) if share > 0 else ""


def _one_line(text: str, limit: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_answer(answer: Any) -> str:
    lines = [f"query: {answer.query}"]
    if answer.translated:
        lines.append(f"translated: {answer.translated}")
    lines.append(f"mode: {answer.mode} · {count(len(answer.results), 'result')} "
                 f"in {answer.seconds * 1000:.0f} ms")
    for r in answer.results:
        where = r.document + (f" › {r.breadcrumb}" if r.breadcrumb else "")
        lines += ["", f"{r.rank}. {r.chunk_id}  {r.score:.3f}  {where}"]
        sig = "  ".join(f"{name} {_bar(v)} {v:.2f}" for name, v in sorted(r.signals.items(), key=lambda kv: -kv[1]))
        lines.append(f"   signals  {sig}")
        if r.terms:
            lines.append(f"   terms    {', '.join(r.terms)}")
        if r.entities:
            shown = []
            for e in r.entities[:6]:
                how = f'named "{e.matched}"' if e.matched else ("meant (profile)" if e.via == "profile" else f"via {e.via}")
                shown.append(f"{e.name} ({how})")
            lines.append(f"   entities {'; '.join(shown)}")
        if r.context:
            lines.append(f"   context  {_one_line(r.context, 100)}")
        lines.append(f"   content  {_one_line(r.content, 100)}")
    if not answer.results:
        lines += ["", "no chunk matched"]
    return "\n".join(lines)


def cmd_query(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.retrieval.query import QueryError

    if args.k < 1:
        raise CliError("-k must be at least 1")
    searcher = _searcher(args)
    translated = _Translator(args, searcher)(args.question)
    try:
        answer = searcher.search(args.question, mode=args.mode, k=args.k, translated=translated)
    except QueryError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(json.dumps(answer.to_json(), ensure_ascii=False, indent=2))
    else:
        print(format_answer(answer))
    return 0


def format_scores(k: int, queries: list, methods: list, note: str = "") -> str:
    n = len(queries)
    width = max(10, *(len(m.name) for m in methods))
    head = f"{'method':<{width}} {'Hit@' + str(k):>6} {'recovered':>10} {'Recall@' + str(k):>9} {'MRR':>6} {'nDCG@' + str(k):>7}"
    lines = [head]
    for m in methods:
        lines.append(f"{m.name:<{width}} {f'{m.hits}/{n}':>6} {f'{m.recovered}/{k * n}':>10} {m.recall:>9.3f} "
                     f"{m.mrr:>6.3f} {m.ndcg:>7.3f}")
    if note:
        lines.append(note)
    default = next((m for m in methods if m.name == "default"), methods[-1])
    lines += ["", f"per query ({default.name}):"]
    text = {q.id: q.query for q in queries}
    for s in default.per_query:
        rank = f"first relevant at {s.first_rank}" if s.first_rank else "no relevant chunk in the top 20"
        lines.append(f"  {'✓' if s.hit else '✗'} {s.id:<22} {rank:<32} {_one_line(text[s.id], 40)}")
    return "\n".join(lines)


def cmd_eval(args: argparse.Namespace) -> int:
    from ctxfst_tui.core.retrieval import reference
    from ctxfst_tui.core.retrieval.corpus import CorpusError, load_corpus
    from ctxfst_tui.core.retrieval.evaluate import OUR_METHODS, QueriesError, load_queries, our_ranker, score_method
    from ctxfst_tui.core.retrieval.index import default_uri

    if args.k < 1:
        raise CliError("-k must be at least 1")
    try:
        queries = load_queries(args.queries)
        expansions = reference.load_expansions(args.expansions) if args.expansions else None
    except (QueriesError, reference.ExpansionsError) as exc:
        raise CliError(str(exc)) from None
    uri = args.db or default_uri(args.path)
    if not Path(uri).exists() and "://" not in uri:
        cmd_index(args, sys.stderr if args.json else None)
    searcher = _searcher(args)
    translate = _Translator(args, searcher)
    translations = {q.id: translate(q.query) for q in queries}
    try:
        ref = reference.for_corpus(load_corpus(args.path), expansions)
    except CorpusError as exc:
        raise CliError(str(exc)) from None
    methods = [score_method("reference-tfidf", lambda q: ref.tfidf(q.query), searcher, queries, args.k),
               score_method("reference-entity", lambda q: ref.entity(q.query), searcher, queries, args.k)]
    note = ("" if expansions else "(reference-*: no expansion tables; --expansions FILE reads the reference's, "
            "which its published numbers use)")
    for name, mode in OUR_METHODS.items():
        if mode == "vector" and not searcher.has_vectors:
            continue
        methods.append(score_method(name, our_ranker(searcher, mode, translations), searcher, queries, args.k))
    if args.json:
        print(json.dumps({"k": args.k, "queries": len(queries), "expansions": expansions.source if expansions else None,
                          "methods": [m.to_json() for m in methods]}, ensure_ascii=False, indent=2))
    else:
        print(format_scores(args.k, queries, methods, note))
    return 0
