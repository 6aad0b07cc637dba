#!/usr/bin/env python3
"""Diagnosis benchmark: ``diagnose`` on a big workspace and on one big document, next to
``validate`` and ``entities suggest`` on the same inputs.

Both inputs are generated into a temporary folder from the sentences of the shared Markdown
corpus, so they share a vocabulary the way a real knowledge base does:

* **folder** — ``--docs`` small CtxFST documents (default 5,000): each declares 4-8 entities
  drawn from one pool of ~300 (the same ids in hundreds of documents, now and then with another
  type), and 3-5 chunks of sentences drawn from one stretch of the corpus each (chunks from
  nearby stretches share a topic and a sentence now and then); one document in ten is an edited
  copy of an earlier one, so near-duplicates cross documents;
* **document** — one document of ``--chunks`` chunks (default 17,500, ~20 MB) built the same
  way over the whole pool, 3 % of them pasted twice with one sentence added.

Each command runs as a child process (``ctxfst-tui`` of this checkout); the table gives the
median wall time, the median peak RSS (``wait4`` rusage), the findings the command reports
(its last line) and the lines it printed. A run past ``--timeout`` seconds or ``--max-rss`` MB
is stopped and shown as ``>``; such a command is not run again. Targets for ``diagnose``:
≤ 30 s and ≤ 1 GB on each input, and output a person can read.

    .venv/bin/python bench/diagnose.py [--runs 3] [--small] [--keep DIR]

``--small``: 500 documents and a 2 MB document (1,750 chunks), for a quick run.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "markdown"
CLI = ROOT / ".venv" / "bin" / "ctxfst-tui"

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])")
TYPES = ("concept", "tool", "skill", "framework", "library")
NEIGHBOURHOOD = 30  # sentences either side of a chunk's centre it draws from
TAGS = ("Backend", "Rust", "Python", "API", "Testing", "Errors", "Memory", "Async", "Types", "Web",
        "CLI", "Security", "Docs", "Performance", "Data")


def corpus_sentences(root: Path) -> list[str]:
    """Prose sentences of the corpus (no code, headings, tables or list markers), 6-40 words."""
    out: list[str] = []
    for f in sorted(root.rglob("*.md")):
        in_fence = False
        para: list[str] = []
        for line in f.read_text(encoding="utf-8").splitlines() + [""]:
            if line.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            s = line.strip()
            if not s or s.startswith(("#", "|", "<", "!", "-", "*", ">", "[")) or s[:2].rstrip(".").isdigit():
                if para:
                    for sent in SENTENCE_END.split(" ".join(para)):
                        if 6 <= len(sent.split()) <= 40 and sent.endswith((".", "!", "?")) and "{" not in sent:
                            out.append(sent)
                    para = []
                continue
            para.append(s)
    return out


def entity_pool(sentences: list[str], size: int, rnd: random.Random) -> list[dict]:
    """The most frequent names of the corpus as entities: backticked identifiers, and capitalised
    words, both seldom written as a plain lower-case word (so 'Rust' and `unwrap`, not 'There' or `use`)."""
    counts: dict[str, int] = {}
    lower: dict[str, int] = {}
    for s in sentences:
        for w in re.findall(r"\b[a-z][a-z]{2,15}\b", re.sub(r"`[^`]*`", " ", s)):
            lower[w] = lower.get(w, 0) + 1
        for term in re.findall(r"`([A-Za-z_][A-Za-z0-9_]{2,20})`|(?<=\w )([A-Z][a-zA-Z]{2,15})\b", s):
            t = term[0] or term[1]
            counts[t] = counts.get(t, 0) + 1
    seen: set[str] = set()
    pool = []
    for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        slug = re.sub(r"[^a-z0-9]+", "-", t.lower()).strip("-")
        if not slug or slug in seen or lower.get(t.lower(), 0) * 2 > n:
            continue
        seen.add(slug)
        pool.append({"id": f"entity:{slug}", "name": t, "type": rnd.choice(TYPES)})
        if len(pool) == size:
            break
    return pool


def yaml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(title: str, ents: list[dict], chunks: list[dict]) -> str:
    fm = [f"title: {yaml_str(title)}", "entities:"]
    for e in ents:
        fm += [f"  - id: {e['id']}", f"    name: {yaml_str(e['name'])}", f"    type: {e['type']}"]
    fm.append("chunks:")
    body = []
    for c in chunks:
        fm += [f"  - id: {c['id']}", f"    tags: [{', '.join(c['tags'])}]",
               f"    entities: [{', '.join(c['entities'])}]", f"    context: {yaml_str(c['context'])}"]
        body.append(f'<Chunk id="{c["id"]}">\n## {c["title"]}\n\n{c["content"]}\n</Chunk>\n')
    return "---\n" + "\n".join(fm) + "\n---\n\n" + "\n".join(body)


def make_chunk(cid: str, sentences: list[str], ents: list[dict], rnd: random.Random, n_sent: tuple[int, int]) -> dict:
    """A chunk of sentences drawn from one stretch of the corpus: chunks near each other share a
    topic and now and then a sentence, as sections of one manual do."""
    centre = rnd.randrange(NEIGHBOURHOOD, len(sentences) - NEIGHBOURHOOD)
    picks = sorted(rnd.sample(range(centre - NEIGHBOURHOOD, centre + NEIGHBOURHOOD), rnd.randint(*n_sent)))
    sents = [sentences[k] for k in picks]
    content = " ".join(sents)
    named = [e["id"] for e in ents if e["name"] in content]
    links = list(dict.fromkeys(named[:4] + [rnd.choice(ents)["id"]]))
    return {"id": cid, "title": " ".join(sents[0].split()[:6]).rstrip(".,;:"), "content": content,
            "context": sents[-1] if len(sents) > 1 else sents[0], "entities": links,
            "tags": rnd.sample(TAGS, rnd.randint(1, 3))}


def edited(chunk: dict, cid: str, sentences: list[str], rnd: random.Random) -> dict:
    """A copy of ``chunk`` with one more sentence: a near-duplicate."""
    return {**chunk, "id": cid, "content": chunk["content"] + " " + rnd.choice(sentences)}


def declared(pool: list[dict], rnd: random.Random, k: int) -> list[dict]:
    """``k`` entities of the pool, one in twenty with another type than usual (as people write them)."""
    out = []
    for e in rnd.sample(pool, k):
        if rnd.random() < 0.05:
            e = {**e, "type": rnd.choice(TYPES)}
        out.append(e)
    return out


def make_folder(dst: Path, n_docs: int, sentences: list[str], pool: list[dict], seed: int) -> int:
    rnd = random.Random(seed)
    dst.mkdir(parents=True)
    made: list[tuple[list[dict], list[dict]]] = []
    size = 0
    for k in range(n_docs):
        topic = rnd.choice(("guide", "ref", "howto", "note"))
        if made and rnd.random() < 0.1:  # an edited copy of an earlier document
            ents, chunks = rnd.choice(made)
            chunks = [edited(c, f"{topic}:{k}-{j}", sentences, rnd) for j, c in enumerate(chunks)]
        else:
            ents = declared(pool, rnd, rnd.randint(4, 8))
            chunks = [make_chunk(f"{topic}:{k}-{j}", sentences, ents, rnd, (3, 8)) for j in range(rnd.randint(3, 5))]
            made.append((ents, chunks))
        text = render(f"Document {k}", ents, chunks)
        size += len(text.encode())
        (dst / f"doc-{k:05d}.ctxfst.md").write_text(text, encoding="utf-8")
    return size


def make_document(dst: Path, n_chunks: int, sentences: list[str], pool: list[dict], seed: int) -> int:
    rnd = random.Random(seed + 1)
    ents = pool
    chunks: list[dict] = []
    for j in range(n_chunks):
        if chunks and rnd.random() < 0.03:  # boilerplate pasted twice
            chunks.append(edited(rnd.choice(chunks), f"section:part-{j}", sentences, rnd))
        else:
            chunks.append(make_chunk(f"section:part-{j}", sentences, ents, rnd, (6, 11)))
    text = render("One big document", ents, chunks)
    dst.write_text(text, encoding="utf-8")
    return len(text.encode())


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_once(cmd: list[str], timeout: float, max_rss: float) -> dict:
    """Wall time, peak RSS, output lines and findings of one child run (stopped past the limits)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        stopped = ""
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            elapsed = time.perf_counter() - t0
            if elapsed > timeout:
                stopped = "time"
            elif rss_mb(p.pid) > max_rss:
                stopped = "memory"
            if stopped:
                os.killpg(p.pid, signal.SIGKILL)
                _, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.1)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        lines = out.read().decode("utf-8", "replace").splitlines()
    last = lines[-1] if lines else ""
    nums = {k: int(v.replace(",", "")) for v, k in re.findall(r"([\d,]+) (finding|error|warning)s?\b", last)}
    findings = (nums.get("finding", nums.get("error", 0) + nums.get("warning", 0))) if nums else None
    return {"wall": wall, "rss": usage.ru_maxrss / 1024, "lines": len(lines), "findings": findings,
            "stopped": stopped, "status": p.returncode, "last": last}


def measure(cmd: list[str], runs: int, timeout: float, max_rss: float) -> dict:
    results = []
    for _ in range(runs):
        r = run_once(cmd, timeout, max_rss)
        results.append(r)
        if r["stopped"]:
            break
    first = results[-1]
    return {"wall": statistics.median(r["wall"] for r in results), "rss": statistics.median(r["rss"] for r in results),
            "lines": first["lines"], "findings": first["findings"], "stopped": first["stopped"],
            "runs": len(results), "last": first["last"], "status": first["status"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--docs", type=int, default=5000, help="documents in the folder (default 5,000)")
    ap.add_argument("--chunks", type=int, default=17_500, help="chunks of the big document (default 17,500)")
    ap.add_argument("--small", action="store_true", help="500 documents and a 1,750-chunk (2 MB) document")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300, help="stop a run after this many seconds")
    ap.add_argument("--max-rss", type=float, default=4096, help="stop a run above this RSS in MB")
    ap.add_argument("--only", choices=("folder", "document"), help="measure one input only")
    ap.add_argument("--commands", default="diagnose,validate,suggest", help="comma-separated subset")
    ap.add_argument("--keep", help="generate the inputs into this folder and keep them")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if args.small:
        args.docs, args.chunks = args.docs // 10, args.chunks // 10
    rnd = random.Random(args.seed)
    sentences = corpus_sentences(Path(args.corpus))
    if len(sentences) < 100:
        sys.exit(f"too few prose sentences under {args.corpus}")
    pool = entity_pool(sentences, 300, rnd)
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-diagnose-"))
    try:
        inputs = []
        if args.only in (None, "folder"):
            folder = tmp / "folder"
            if not folder.exists():
                make_folder(folder, args.docs, sentences, pool, args.seed)
            size = sum(f.stat().st_size for f in folder.iterdir())
            inputs.append((f"folder: {args.docs:,} docs, {size / 1e6:.1f} MB", folder))
        if args.only in (None, "document"):
            doc = tmp / "big.ctxfst.md"
            if not doc.exists():
                make_document(doc, args.chunks, sentences, pool, args.seed)
            inputs.append((f"document: {args.chunks:,} chunks, {doc.stat().st_size / 1e6:.1f} MB", doc))
        commands = {"diagnose": ["diagnose"], "validate": ["validate"], "suggest": ["entities", "suggest"]}
        chosen = [c.strip() for c in args.commands.split(",") if c.strip()]
        print(f"{len(sentences):,} corpus sentences, {len(pool)} pooled entities; median of {args.runs} runs; "
              f"limits {args.timeout:.0f} s, {args.max_rss:.0f} MB; {os.cpu_count()} CPUs (shared machine)")
        header = f"{'input':38} {'command':18} {'wall s':>8} {'peak MB':>8} {'findings':>9} {'lines':>8}"
        print(header)
        print("-" * len(header))
        for label, path in inputs:
            for name in chosen:
                r = measure([str(CLI), *commands[name], str(path)], args.runs, args.timeout, args.max_rss)
                mark = ">" if r["stopped"] else ""
                wall = f"{mark}{r['wall']:.1f}"
                rss = f"{mark}{r['rss']:.0f}"
                found = "-" if r["findings"] is None or r["stopped"] else f"{r['findings']:,}"
                print(f"{label:38} {' '.join(commands[name]):18} {wall:>8} {rss:>8} {found:>9} {r['lines']:>8,}"
                      + (f"  (stopped: {r['stopped']}, {r['runs']} run)" if r["stopped"] else ""), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
