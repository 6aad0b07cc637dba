"""Benchmark of the default model runtime on this machine.

Prints, for the bundled Gemma 3 270M GGUF through the in-process llama.cpp backend:

* load time (first load after the GGUF is assembled and hashed; the hash is cached);
* prompt-evaluation and generation speed in tokens per second;
* wall time of contextualizing ``sample_docs/*.ctxfst.md`` (copied to a temporary folder,
  never the originals) **cold** — a fresh completion cache, every note is a model call — and
  **warm** — the same cache, unchanged documents: it must make zero model calls.

Usage: ``python bench/model.py [--threads N] [--n-ctx N] [--model PATH.gguf] [--verbose]``.
Exits 1 when the warm run makes a model call (the cache is broken).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from ctxfst_tui.cli.contextualize_report import format_report
from ctxfst_tui.core.contextualize.options import ContextualizeOptions
from ctxfst_tui.core.contextualize.run import contextualize
from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.llm import CachedBackend, CompletionCache
from ctxfst_tui.core.llm.llama import LlamaBackend, default_threads

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_docs"

PROMPT_TEXT = (
    "Kubernetes schedules containers onto nodes; a Deployment keeps a number of identical pods running and "
    "replaces them during a rolling update. Helm packages the manifests as a chart with values. "
)


def _speed(backend: LlamaBackend) -> tuple[float, float, int, int]:
    """(prompt tokens/s, generation tokens/s, prompt tokens, generated tokens), fresh prompts."""
    long_prompt = "Notes, part A.\n" + PROMPT_TEXT * 12
    c = backend.complete(long_prompt, max_tokens=1)
    prompt_tps = c.prompt_tokens / c.prompt_seconds if c.prompt_seconds > 0 else 0.0
    g = backend.complete("Notes, part B. Counting: 1, 2, 3, 4, 5,", max_tokens=96, stop=[])
    return prompt_tps, g.tokens_per_second, c.prompt_tokens, g.completion_tokens


def _run_docs(docs: list[Path], backend: CachedBackend, verbose: bool) -> tuple[float, int, int, int, int]:
    """(wall seconds, model calls, cache hits, ok, failed) of contextualizing and saving every doc."""
    t0 = time.perf_counter()
    calls = hits = ok = failed = 0
    for path in docs:
        doc = Document.load(path)
        report = contextualize(doc, backend, ContextualizeOptions())
        doc.save()
        calls += report.model_calls
        hits += report.cache_hits
        ok += report.ok
        failed += report.failed
        if verbose:
            print(format_report(report, verbose=True))
    return time.perf_counter() - t0, calls, hits, ok, failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=None, help=f"llama.cpp threads (default {default_threads()})")
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--model", default=None, help="a GGUF file instead of the bundled model")
    ap.add_argument("--verbose", action="store_true", help="print every note")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="ctxfst-bench-") as tmp:
        tmpdir = Path(tmp)
        docs_dir = tmpdir / "docs"
        docs_dir.mkdir()
        docs = []
        for src in sorted(SAMPLES.glob("*.ctxfst.md")):
            dst = docs_dir / src.name
            shutil.copyfile(src, dst)
            docs.append(dst)
        cache = CompletionCache(tmpdir / "completions.sqlite")  # a fresh cache: the cold run
        llama = LlamaBackend(args.model, n_ctx=args.n_ctx, n_threads=args.threads, hash_cache=cache)

        t0 = time.perf_counter()
        model_path = llama.resolve_path()
        assemble = time.perf_counter() - t0
        t0 = time.perf_counter()
        model_id = llama.model_id
        hashing = time.perf_counter() - t0
        load = llama.load()
        print(f"model          {model_path.name} ({model_path.stat().st_size / 1e6:.0f} MB), {model_id[:24]}...")
        print(f"machine        {llama.n_threads} thread(s), n_ctx {llama.n_ctx}")
        print(f"locate/assemble {assemble:6.2f} s   sha256 {hashing:5.2f} s (cached by path+mtime+size after the first time)")
        print(f"load           {load:6.2f} s")
        ptps, gtps, pt, gt = _speed(llama)
        print(f"prompt eval    {ptps:8.0f} tokens/s  ({pt} tokens)")
        print(f"generation     {gtps:8.1f} tokens/s  ({gt} tokens)")

        # the cold run copies the docs again for the warm run: the cold run writes notes into them
        warm_dir = tmpdir / "warm"
        shutil.copytree(docs_dir, warm_dir)
        warm_docs = [warm_dir / d.name for d in docs]
        backend = CachedBackend(llama, cache)
        n_chunks = sum(len(Document.load(d).chunks) for d in docs)
        cold = _run_docs(docs, backend, args.verbose)
        print(f"contextualize  cold {cold[0]:7.2f} s  {len(docs)} docs, {n_chunks} chunks: {cold[1]} model calls, "
              f"{cold[2]} cached, {cold[3]} ok, {cold[4]} rejected/failed")
        warm = _run_docs(warm_docs, backend, False)
        print(f"contextualize  warm {warm[0]:7.2f} s  {warm[1]} model calls, {warm[2]} cached, {warm[3]} ok, {warm[4]} rejected/failed")
        llama.close()
        cache.close()
        if warm[1] != 0:
            print("FAIL: the warm run made model calls (the completion cache did not serve them)")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
