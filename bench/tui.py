#!/usr/bin/env python3
"""Workbench speed on real sizes (issue 7, item 6), measured with Textual's headless driver.

Everything is measured in one run against a floor measured in the same run, so the ratios hold
on a noisy machine:

* **cold start → first paint** on ``sample_docs/``: ``python -c`` subprocesses (fresh
  interpreter, cold imports) that run the app headless and exit at the first frame that shows
  the document list. The parent times spawn → that frame (the child reports each frame on a
  pipe the moment it is rendered); the child reports its own import time. Floor: a bare
  Textual app with a ``Tree`` of the same listing, started the same way. Target ≤ 1 s.
* **opening** a 1 MB Markdown document (concatenated ``../shared/corpus/markdown`` files) and
  a 3 MB novel (the ``../shared/corpus/novels`` texts repeated, one Gutenberg header and footer
  kept) from a temporary folder: from Enter on the document in the tree (pilot keys) to the
  first frame at which the source view shows it, its summary is shown, the chunk map has its
  spans and the token counts are shown. A fresh app per repeat. Floor: a bare viewer (a
  ``Tree`` and a read-only ``TextArea`` that loads the file on select). Target ≤ 1.5 s each.
* **key latency** while scrolling the open 1 MB document: ``down`` / ``pagedown`` on the
  focused source view and chunk map, ``--keys`` presses each, median and p90. Two measures:
  *pilot* — ``pilot.press(key)`` + ``pilot.pause()``, the issue's measure (it includes the
  driver's own idle waits: ``wait_for_idle`` compares process CPU time with wall time, so any
  busy thread in the process lengthens it); *frame* — from posting the key event to the first
  rendered frame that shows its effect (cursor or scroll moved). Floor: the bare app's tree
  (``down`` / ``up``), both measures. Then the same while a model job runs: a fake backend
  (``backend_factory``) whose ``complete`` sleeps 20 ms a token (the model computing, GIL
  released) plus some Python work per token and streams tokens to the job's progress line,
  started with ``app.start_job`` like ``ctrl+k`` does. Target ≤ 1.5× the bare app.
* **memory**: peak RSS (``resource.getrusage``) of a subprocess that starts the app on the
  folder and opens the 3 MB novel; the bare app's (tree only) and the bare viewer's (with the
  novel loaded) in their own subprocesses.

Anything that times out is printed as ``timeout`` instead of failing the run.

Usage: ``python bench/tui.py [--quick] [--json] [--size 120x40] [--keys N] [--profile]
[--job-load sleep|cpu]``. ``--profile`` adds where the time of each open goes: a timeline
of the workers' and the UI thread's steps and the UI thread's longest stalls. Exits 1 when a
target is missed.

Only stdlib at module level: the cold-start children import this file and must pay for
nothing but the app they start.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_docs"
CORPUS = ROOT.parent / "shared" / "corpus"
THIS = Path(__file__).resolve()

TARGET_START = 1.0  # s, cold process to first paint
TARGET_OPEN = 1.5  # s, any document open
TARGET_KEY_RATIO = 1.5  # × the bare app's key latency

SUFFIXES = (".md", ".txt")  # what the workbench lists (core.workspace.DOCUMENT_SUFFIXES)
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".tox"}

# The child of a cold start: nothing imported before T0 but ``time`` (the interpreter's own start-up
# is in the parent's wall time only); then this file (stdlib only) and the app.
CHILD = (
    "import time; T0 = time.perf_counter()\n"
    "import sys, importlib.util as u\n"
    "s = u.spec_from_file_location('ctxfst_bench_tui', sys.argv[1]); m = u.module_from_spec(s); s.loader.exec_module(m)\n"
    "m.child_start(T0, *sys.argv[2:])\n"
)


# ---------------------------------------------------------------- small helpers


def median(xs: list[float]) -> float | None:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def p90(xs: list[float]) -> float | None:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    k = max(0, -(-9 * len(xs) // 10) - 1)  # ceil(0.9 n) - 1
    return xs[k]


def list_documents(root: Path) -> list[Path]:
    """The workbench's listing (core.workspace.iter_documents), without importing the app."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.lower().endswith(SUFFIXES) and not name.startswith("."):
                found.append(Path(dirpath) / name)
    return found


def rss_peak_mb() -> float:
    """Peak RSS of this process in MB: ``VmHWM`` where Linux has it (``getrusage``'s ``ru_maxrss``
    keeps the parent's peak across fork + exec, so a child started by a big parent would report
    the parent's), else ``resource.getrusage``."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux


# ---------------------------------------------------------------- the apps (Textual imported lazily)

_CLASSES: dict[str, type] = {}


def instrumented(base: type) -> type:
    """``base`` with a frame log: every rendered update is timed (and a probe evaluated) as it is
    handed to the driver — the moment a terminal would get it. Headless, nothing is written."""
    key = f"instrumented:{base.__module__}.{base.__qualname__}"
    if key in _CLASSES:
        return _CLASSES[key]

    class Instrumented(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.frames: list[tuple[float, object]] = []
            self.probe = None  # () -> value recorded with each frame
            self.on_frame = None  # (t) -> None, after the frame is logged

        def _display(self, screen, renderable) -> None:  # noqa: ANN001
            if renderable is not None:
                t = time.perf_counter()
                value = None
                if self.probe is not None:
                    try:
                        value = self.probe()
                    except Exception:  # noqa: BLE001 - a probe must never break the app
                        value = None
                self.frames.append((t, value))
                if self.on_frame is not None:
                    self.on_frame(t)
            super()._display(screen, renderable)

    Instrumented.__name__ = Instrumented.__qualname__ = base.__name__
    _CLASSES[key] = Instrumented
    return Instrumented


def bare_app_class() -> type:
    """The floor: a Textual app with a Tree of the same listing (and, with ``viewer=True``, a
    read-only TextArea that loads the selected file — the floor of opening a document; with
    ``query=True``, a plain ``Input`` under the tree — the floor of typing a query)."""
    if "bare" in _CLASSES:
        return _CLASSES["bare"]
    from textual.app import App
    from textual.widgets import Tree

    class BareApp(App[None]):
        CSS = "Tree { width: 36; height: 1fr; } TextArea { width: 1fr; height: 1fr; } #query { dock: bottom; }"

        def __init__(self, folder: Path, viewer: bool = False, query: bool = False) -> None:
            super().__init__()
            self.folder = Path(folder)
            self.viewer = viewer
            self.query = query

        def compose(self):  # noqa: ANN201
            tree: Tree = Tree(self.folder.name, id="tree")
            tree.show_root = False
            layout: dict = {}
            for path in list_documents(self.folder):
                level = layout
                parts = path.relative_to(self.folder).parts
                for folder in parts[:-1]:
                    level = level.setdefault(folder + "/", {})
                level[parts[-1]] = path

            def add(node, level: dict) -> None:  # noqa: ANN001
                for name in sorted(k for k, v in level.items() if isinstance(v, dict)):
                    add(node.add(name, expand=True), level[name])
                for name, v in level.items():
                    if not isinstance(v, dict):
                        node.add_leaf(name, data=v)

            add(tree.root, layout)
            tree.root.expand()
            if self.query:
                from textual.widgets import Input

                yield Input(placeholder="a question", id="query")
            if not self.viewer:
                yield tree
                return
            from textual.containers import Horizontal
            from textual.widgets import TextArea

            with Horizontal():
                yield tree
                yield TextArea("", read_only=True, show_line_numbers=True, soft_wrap=False, id="text")

        def on_mount(self) -> None:
            self.query_one(Tree).focus()

        def on_tree_node_selected(self, event) -> None:  # noqa: ANN001
            if self.viewer and isinstance(event.node.data, Path):
                from textual.widgets import TextArea

                area = self.query_one(TextArea)
                area.load_text(event.node.data.read_text("utf-8", errors="replace"))
                area.border_title = event.node.data.name

    _CLASSES["bare"] = BareApp
    return BareApp


def ours_class() -> type:
    from ctxfst_tui.ui.app import WorkbenchApp

    return WorkbenchApp


def tree_of(app):  # noqa: ANN001, ANN201
    from textual.widgets import Tree

    return app.screen.query(Tree).first()


def tree_listed(app) -> bool:  # noqa: ANN001
    from textual.widgets import Tree

    return any(t.root.children for t in app.screen.query(Tree))


# ---------------------------------------------------------------- cold start (subprocesses)


def child_start(t0: float, mode: str, folder: str, size: str) -> None:
    """In the child: import the app, run it headless, report each event on stdout as it happens."""
    t_import = time.perf_counter()
    if mode == "ours":
        import ctxfst_tui.cli  # noqa: F401 - what the ``ctxfst-tui`` script imports first

        base = ours_class()
    else:
        base = bare_app_class()
    imported = time.perf_counter()

    def emit(line: str) -> None:
        os.write(1, (line + "\n").encode())

    emit(f"imported {imported - t0:.6f} {imported - t_import:.6f}")
    app = instrumented(base)(Path(folder))
    seen = {"first": False, "listed": False}

    def on_frame(t: float) -> None:
        if not seen["first"]:
            seen["first"] = True
            emit(f"first {t - t0:.6f}")
        if not seen["listed"] and tree_listed(app):
            seen["listed"] = True
            emit(f"listed {t - t0:.6f}")
            app.exit()

    app.on_frame = on_frame
    w, h = (int(x) for x in size.split("x"))

    def give_up() -> None:  # never painted the list: say so and leave (the parent counts a timeout)
        emit("gave-up")
        os._exit(3)

    import threading

    timer = threading.Timer(30.0, give_up)
    timer.daemon = True
    timer.start()
    app.run(headless=True, size=(w, h))
    timer.cancel()
    emit(f"exited {time.perf_counter() - t0:.6f}")


def cold_start(mode: str, folder: Path, size: str, timeout: float = 40.0) -> dict:
    """One cold start: parent-side wall times from spawn to each event the child reports."""
    import subprocess
    import threading

    cmd = [sys.executable, "-c", CHILD, str(THIS), mode, str(folder), size]
    events: dict[str, float] = {}
    child: dict[str, float] = {}
    t_spawn = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT))

    def reader() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            now = time.perf_counter()
            parts = raw.decode(errors="replace").split()
            if not parts:
                continue
            events.setdefault(parts[0], now - t_spawn)
            if parts[0] == "imported" and len(parts) >= 3:
                child["t0_to_imported"], child["import"] = float(parts[1]), float(parts[2])
            elif len(parts) >= 2 and parts[0] in ("first", "listed", "exited"):
                try:
                    child[parts[0]] = float(parts[1])
                except ValueError:
                    pass

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    th.join(5)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    return {"events": events, "child": child, "rc": proc.returncode, "stderr": err[-2000:]}


def interpreter_start(repeats: int) -> float | None:
    import subprocess

    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import time"], check=False)
        times.append(time.perf_counter() - t)
    return median(times)


# ---------------------------------------------------------------- the big documents


def build_folder(tmp: Path) -> dict[str, Path] | None:
    """A folder with a ≥ 1 MB Markdown document, a ≥ 3 MB novel and one CtxFST sample (for jobs)."""
    md_files = sorted((CORPUS / "markdown").rglob("*.md"))
    novels = sorted((CORPUS / "novels").glob("*.txt"))
    if not md_files or not novels:
        return None
    folder = tmp / "docs"
    folder.mkdir()
    parts, n = [], 0
    for p in md_files:
        text = p.read_text("utf-8", errors="replace").replace("\r\n", "\n")
        parts.append(text.rstrip("\n") + "\n")
        n += len(text.encode())
        if n >= 1 << 20:
            break
    md = folder / "big-markdown.md"
    md.write_text("\n".join(parts), "utf-8")
    header = footer = ""
    bodies = []
    for p in novels:
        text = p.read_text("utf-8-sig", errors="replace").replace("\r\n", "\n")
        lines = text.split("\n")
        start = next((i for i, l in enumerate(lines) if l.startswith("*** START OF")), None)
        end = next((i for i, l in enumerate(lines) if l.startswith("*** END OF")), None)
        if start is not None and end is not None:
            if not header:  # one Gutenberg header and footer are kept, around everything
                header, footer = "\n".join(lines[: start + 1]), "\n".join(lines[end:])
            text = "\n".join(lines[start + 1: end])
        bodies.append(text.strip("\n"))
    out, n = [header] if header else [], 0
    i = 0
    while n < 3 << 20:
        body = bodies[i % len(bodies)]
        out.append(body)
        n += len(body.encode())
        i += 1
    if footer:
        out.append(footer)
    novel = folder / "big-novel.txt"
    novel.write_text("\n\n\n".join(out) + "\n", "utf-8")
    runbook = folder / "platform-runbook.ctxfst.md"
    src = SAMPLES / "platform-runbook.ctxfst.md"
    if src.exists():
        runbook.write_bytes(src.read_bytes())
    else:
        found = sorted(SAMPLES.glob("*.ctxfst.md"))
        if found:
            runbook = folder / found[0].name
            runbook.write_bytes(found[0].read_bytes())
    return {"folder": folder, "md": md, "novel": novel, "runbook": runbook}


# ---------------------------------------------------------------- driving an app (in this process)


class Timeout(Exception):
    pass


async def wait_until(pilot, condition, timeout: float, step: float = 0.01) -> float:  # noqa: ANN001
    """Pause until ``condition()``; the seconds it took. Raises Timeout."""
    t0 = time.perf_counter()
    while True:
        try:
            if condition():
                return time.perf_counter() - t0
        except Exception:  # noqa: BLE001 - a widget not there yet
            pass
        if time.perf_counter() - t0 > timeout:
            raise Timeout
        await pilot.pause(step)


def busy_workers(app, ignore: tuple[str, ...] = ("model",)) -> list:  # noqa: ANN001
    from textual.worker import WorkerState

    return [w for w in app.workers if w.state in (WorkerState.PENDING, WorkerState.RUNNING) and w.group not in ignore]


async def settle(pilot, app, timeout: float = 60.0) -> float:  # noqa: ANN001
    """Wait until no worker runs (the scan, validation, analysis) and the UI is idle."""
    from textual._wait import wait_for_idle

    t0 = time.perf_counter()
    try:
        await wait_until(pilot, lambda: tree_listed(app), timeout)
        await wait_until(pilot, lambda: not busy_workers(app), timeout, step=0.05)
    except Timeout:
        pass
    await pilot.pause()
    await wait_for_idle(0.05, 2.0)
    return time.perf_counter() - t0


async def cursor_to(pilot, app, path: Path) -> None:  # noqa: ANN001
    """Move the tree's cursor onto ``path`` with pilot keys (focused tree)."""
    tree = tree_of(app)
    tree.focus()
    await pilot.pause()
    for _ in range(400):
        node = tree.cursor_node
        if node is not None and node.data == path:
            return
        target = _find_node(tree.root, path)
        if target is None:
            raise Timeout
        await pilot.press("down" if target.line > tree.cursor_line else "up")
    raise Timeout


def _find_node(node, path: Path):  # noqa: ANN001, ANN202
    for child in node.children:
        if child.data == path:
            return child
        found = _find_node(child, path)
        if found is not None:
            return found
    return None


def first_true(frames: list[tuple[float, object]], since: int, t0: float, index: int | None = None) -> float | None:
    """Seconds from ``t0`` to the first frame (after ``since``) whose probe value (or its item
    ``index``) is true."""
    for t, value in frames[since:]:
        if t < t0 or value is None:
            continue
        v = value[index] if index is not None else value
        if v:
            return t - t0
    return None


# ---------------------------------------------------------------- opening a document


def ours_open_probe(app, path: Path):  # noqa: ANN001, ANN201
    """(source shows it, summary shows it, chunk map has its spans, token counts shown)."""
    from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
    from ctxfst_tui.ui.widgets.chunks.preview import ChunkPreview
    from ctxfst_tui.ui.widgets.document.summary import DocumentSummary
    from ctxfst_tui.ui.widgets.document.source_view import SourceView
    from textual.widgets import Static

    screen = app.screen
    source = screen.query_one(SourceView)
    summary = screen.query_one(DocumentSummary)
    chunk_map = screen.query_one(ChunkMap)
    preview = screen.query(ChunkPreview).first()
    spans_before = chunk_map.spans
    name = path.name

    def token_texts() -> str:
        texts = []
        for w in preview.query(Static):
            try:
                texts.append(str(w.content))
            except Exception:  # noqa: BLE001
                pass
        return " ".join(texts) + " " + str(getattr(summary, "text", ""))

    tokens_before = token_texts()

    def probe() -> tuple[bool, bool, bool, bool]:
        shown = name in str(source.border_title)
        summ = name in summary.text and "Opening" not in summary.text
        spans = chunk_map.spans is not spans_before and bool(chunk_map.spans)
        toks = token_texts()
        tokens = spans and "tok" in toks and toks != tokens_before
        return shown, summ, spans, tokens

    return probe


def bare_open_probe(app, path: Path):  # noqa: ANN001, ANN201
    from textual.widgets import TextArea

    area = app.query_one(TextArea)
    return lambda: (path.name == str(area.border_title),)


async def open_once(kind: str, folder: Path, path: Path, size: tuple[int, int], timeout: float,
                    profile: bool = False) -> dict:
    """Start a fresh app on ``folder``, let it settle, then Enter on ``path``: seconds to each condition."""
    import asyncio

    if kind == "ours":
        app = instrumented(ours_class())(folder)
    else:
        app = instrumented(bare_app_class())(folder, viewer=True)
    result: dict = {"settle": None, "parts": None, "total": None, "stalls": None}
    async with app.run_test(size=size) as pilot:
        result["settle"] = await settle(pilot, app)
        await cursor_to(pilot, app, path)
        await pilot.pause()
        probe = ours_open_probe(app, path) if kind == "ours" else bare_open_probe(app, path)
        app.probe = probe
        since = len(app.frames)
        gaps: list[tuple[float, float]] = []
        stop = False

        async def heartbeat() -> None:  # the UI thread's stalls: how late a 5 ms sleep wakes up
            last = time.perf_counter()
            while not stop:
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                if now - last > 0.025:
                    gaps.append((last, now - last))
                last = now

        beat = asyncio.create_task(heartbeat())
        prof = _Profiler() if profile else None
        t0 = time.perf_counter()
        if prof is not None:
            prof.start(t0)
        await pilot.press("enter")
        try:
            await wait_until(pilot, lambda: all(probe()), timeout)
            await pilot.pause()
        except Timeout:
            pass
        if prof is not None:
            result["profile"] = prof.stop()
        stop = True
        await beat
        n = len(probe())
        parts = [first_true(app.frames, since, t0, i) for i in range(n)]
        result["parts"] = parts
        result["total"] = None if any(p is None for p in parts) else max(parts)
        result["stalls"] = sorted(((round(t - t0, 3), round(g, 3)) for t, g in gaps if t >= t0), key=lambda x: -x[1])[:5]
        app.probe = None
    return result


class _Profiler:
    """Where an open's time goes: timed wrappers around the steps of the open (any thread), and a
    cProfile of the UI thread (the test driver runs the app's loop in this thread)."""

    STEPS = [
        ("ctxfst_tui.ui.app", "build_report", "worker: build_report (read, parse, validate)"),
        ("ctxfst_tui.core.chunking.preview", "Previewer.spans", "worker: Previewer.spans (chunk, count tokens)"),
        ("ctxfst_tui.ui.widgets.document.source_view", "SourceView.show_text", "UI: SourceView.show_text"),
        ("ctxfst_tui.ui.widgets.document.source_view", "SourceView.load_text", "UI:   TextArea.load_text"),
        ("ctxfst_tui.ui.widgets.document.summary", "DocumentSummary.show_report", "UI: DocumentSummary.show_report"),
        ("ctxfst_tui.ui.widgets.diagnosis.findings", "FindingsPane.show_findings", "UI: FindingsPane.show_findings"),
        ("ctxfst_tui.ui.widgets.chunks.preview", "ChunkPreview.show_spans", "UI: ChunkPreview.show_spans"),
        ("ctxfst_tui.ui.widgets.chunks.chunk_map", "ChunkMap.show", "UI:   ChunkMap.show"),
        ("ctxfst_tui.ui.widgets.chunks.chunk_map", "ChunkMap._build_rows", "UI:     ChunkMap._build_rows"),
    ]

    def __init__(self) -> None:
        self.events: list[tuple[str, str, float, float]] = []
        self._undo: list[tuple[object, str, object, bool]] = []
        self.t0 = 0.0

    def start(self, t0: float) -> None:
        import cProfile
        import importlib
        import threading
        from functools import wraps

        self.t0 = t0
        for module_name, qual, label in self.STEPS:
            try:
                owner = importlib.import_module(module_name)
                parts = qual.split(".")
                for p in parts[:-1]:
                    owner = getattr(owner, p)
                attr = parts[-1]
                own = attr in vars(owner) if isinstance(owner, type) else True
                fn = getattr(owner, attr)
            except (ImportError, AttributeError):
                continue

            def make(fn, label):  # noqa: ANN001, ANN202
                @wraps(fn)
                def timed(*a, **k):  # noqa: ANN002, ANN003, ANN202
                    s = time.perf_counter()
                    try:
                        return fn(*a, **k)
                    finally:
                        self.events.append((label, threading.current_thread().name, s - self.t0, time.perf_counter() - s))
                return timed

            self._undo.append((owner, attr, fn, own))
            setattr(owner, attr, make(fn, label))
        self.cprofile = cProfile.Profile()
        self.cprofile.enable()

    def stop(self) -> dict:
        import io
        import pstats

        self.cprofile.disable()
        for owner, attr, fn, own in reversed(self._undo):
            if own:
                setattr(owner, attr, fn)
            else:
                delattr(owner, attr)
        out = io.StringIO()
        pstats.Stats(self.cprofile, stream=out).sort_stats("tottime").print_stats(14)
        lines = [l for l in out.getvalue().splitlines() if l.strip()]
        start = next((i for i, l in enumerate(lines) if l.lstrip().startswith("ncalls")), 0)
        return {"steps": sorted(self.events, key=lambda e: e[2]), "ui_cprofile": lines[start:start + 15]}


# ---------------------------------------------------------------- key latency


def key_state(widget):  # noqa: ANN001, ANN201
    off = widget.scroll_offset
    return (off.x, off.y, getattr(widget, "cursor_location", None), getattr(widget, "cursor_line", None),
            getattr(widget, "selected", None))


def next_key(widget, key: str) -> str:  # noqa: ANN001
    """For the bare tree: down until the last line, then up (a short list must not hit its end);
    for ``letters``: a to z in turn (typing into an input)."""
    if key == "letters":
        i = getattr(widget, "_bench_letter", -1) + 1
        widget._bench_letter = i
        return "abcdefghijklmnopqrstuvwxyz"[i % 26]
    if key != "updown":
        return key
    direction = getattr(widget, "_bench_direction", "down")
    last = max(getattr(widget, "last_line", 1), 1)
    if widget.cursor_line >= last:
        direction = "up"
    elif widget.cursor_line <= 0:
        direction = "down"
    widget._bench_direction = direction
    return direction


async def pilot_latency(pilot, widget, key: str, n: int) -> list[float]:  # noqa: ANN001
    """``pilot.press`` + ``pilot.pause()`` per key, as the issue measures the floor."""
    out = []
    widget.focus()
    await pilot.pause()
    for _ in range(n):
        k = next_key(widget, key)
        t = time.perf_counter()
        await pilot.press(k)
        await pilot.pause()
        out.append(time.perf_counter() - t)
    return out


async def frame_latency(pilot, app, widget, key: str, n: int, timeout: float = 3.0,  # noqa: ANN001
                        state=key_state) -> list[float | None]:  # noqa: ANN001
    """Key event posted → first rendered frame showing its effect, per key (None: never shown)."""
    import asyncio

    from textual import events

    out: list[float | None] = []
    widget.focus()
    await pilot.pause()
    app.probe = lambda: state(widget)
    try:
        for _ in range(n):
            k = next_key(widget, key)
            before = state(widget)
            since = len(app.frames)
            event = events.Key(k, None)
            event.set_sender(app)
            t0 = time.perf_counter()
            app._driver.send_message(event)
            got = None
            while time.perf_counter() - t0 < timeout:
                await asyncio.sleep(0.001)
                got = next((t - t0 for t, v in app.frames[since:] if t >= t0 and v is not None and v != before), None)
                if got is not None:
                    break
            out.append(got)
            await pilot.pause()  # let it settle (not timed)
    finally:
        app.probe = None
    return out


def fake_backend_factory(step: float, cpu: bool, calls: list[int]):  # noqa: ANN201
    """A backend_factory whose model streams a token every ``step`` seconds: a GIL-releasing wait
    (``time.sleep``, or hashing with ``cpu``: a model that burns a core) plus Python work per token."""
    import hashlib

    from ctxfst_tui.core.llm import Cancelled, Completion

    words = ("the runbook explains how the orders service is deployed with helm and how a failed "
             "release is rolled back automatically; Terms: helm; rollback; deployment").split()
    buf = b"x" * (1 << 16)

    class SlowBackend:
        name = "fake"
        model_id = "bench-fake"
        context_size = 8192
        chat = False
        concurrency = 1

        def count_tokens(self, text: str) -> int:
            return len(text.split())

        def complete(self, prompt, *, max_tokens=None, stop=None, temperature=None, cancel=None, on_token=None):  # noqa: ANN001, ANN201
            calls[0] += 1
            t0 = time.perf_counter()
            n = min(max_tokens or 48, 48)
            out = []
            for i in range(n):
                if cancel is not None and cancel.is_set():
                    raise Cancelled("cancelled")
                end = time.perf_counter() + step
                if cpu:
                    while time.perf_counter() < end:
                        hashlib.sha256(buf).digest()  # releases the GIL, burns a core
                else:
                    time.sleep(step)
                acc = 0
                for j in range(3000):  # sampling, detokenising, callbacks: Python work per token
                    acc += j * j
                out.append(words[i % len(words)])
                if on_token is not None:
                    on_token(out[-1] + " ")
            text = " ".join(out)
            return Completion(text, len(prompt.split()), n, "stop", False, time.perf_counter() - t0, step)

    return lambda settings: SlowBackend()


def start_fake_job(app, path: Path):  # noqa: ANN001, ANN201
    """Start a contextualize job on ``path`` the way ctrl+k does (app.start_job, the job status line),
    its body repeated until cancelled so it outlasts the measurement."""
    from ctxfst_tui.core.contextualize.options import ContextualizeOptions
    from ctxfst_tui.services.jobs import Job, JobOutcome, contextualize_job

    screen = app.screen
    data = path.read_bytes()
    job = Job("contextualize", path, path.name, total=0)

    def body(post):  # noqa: ANN001, ANN202
        while not job.cancel.is_set():
            contextualize_job(app.models, job, data, ContextualizeOptions(), post)
        return JobOutcome(job)  # nothing to apply: the bench leaves the document alone

    if not app.start_job(job, body, screen):
        raise RuntimeError("the app refused to start a job")
    try:
        from ctxfst_tui.ui.widgets.jobs.status import JobStatus

        screen.query_one(JobStatus).start(job)
    except Exception:  # noqa: BLE001 - the status line is a nicety here
        pass
    return job


async def ours_keys(folder: Path, md: Path, runbook: Path, size: tuple[int, int], n: int, timeout: float,
                    step: float, cpu: bool) -> dict:
    """Key latencies on the open 1 MB document's source view and chunk map, idle and during a job."""
    import asyncio

    from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
    from ctxfst_tui.ui.widgets.document.source_view import SourceView
    from textual.widgets import TabbedContent, TabPane

    calls = [0]
    cls = instrumented(ours_class())
    app = cls(folder, backend_factory=fake_backend_factory(step, cpu, calls))
    out: dict = {}
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await cursor_to(pilot, app, md)
        probe = ours_open_probe(app, md)
        await pilot.press("enter")
        await wait_until(pilot, lambda: all(probe()), timeout)
        await settle(pilot, app)

        def show(widget) -> None:  # noqa: ANN001 - its tab active, the widget focused
            pane = next((a for a in widget.ancestors if isinstance(a, TabPane)), None)
            if pane is not None and pane.id:
                app.screen.query_one(TabbedContent).active = pane.id
            widget.focus()

        targets = [("source", app.screen.query_one(SourceView)), ("preview", app.screen.query_one(ChunkMap))]
        for phase in ("idle", "job"):
            job = None
            if phase == "job":
                job = start_fake_job(app, runbook)
                await wait_until(pilot, lambda: calls[0] > 0, timeout)
                await pilot.pause(0.3)
            # what the UI does meanwhile: frames a second, CPU of the UI thread (this one) and of the process
            n0, c0, u0, t0 = len(app.frames), time.process_time(), time.thread_time(), time.perf_counter()
            await asyncio.sleep(2.0)
            dt = time.perf_counter() - t0
            out[f"{phase}:ui"] = {"frames_per_s": (len(app.frames) - n0) / dt,
                                  "ui_thread_cpu": (time.thread_time() - u0) / dt, "process_cpu": (time.process_time() - c0) / dt}
            for name, widget in targets:
                show(widget)
                await pilot.pause()
                for key in ("down", "pagedown"):
                    if name == "source":
                        widget.move_cursor((0, 0))
                    widget.scroll_to(0, 0, animate=False)
                    await pilot.pause()
                    frames = await frame_latency(pilot, app, widget, key, n)
                    pilot_ = await pilot_latency(pilot, widget, key, n)
                    out[f"{phase}:{name}:{key}"] = {"pilot": pilot_, "frame": frames}
                    if phase == "idle" and name == "preview":  # how much of it is Textual's scroll animation
                        level = app.animation_level
                        app.animation_level = "none"
                        try:
                            frames = await frame_latency(pilot, app, widget, key, max(5, n // 3))
                            pilot_ = await pilot_latency(pilot, widget, key, max(5, n // 3))
                        finally:
                            app.animation_level = level
                        out[f"{phase}:{name}:{key}:no-animation"] = {"pilot": pilot_, "frame": frames}
            if job is not None:
                out["job_calls"] = calls[0]
                job.cancel.set()
                try:
                    await wait_until(pilot, lambda: app.job is None, 10)
                except Timeout:
                    pass
    return out


def input_state(widget):  # noqa: ANN001, ANN201
    return widget.value, widget.cursor_position


async def retrieval_keys(folder: Path, size: tuple[int, int], n: int, timeout: float) -> dict:
    """Typing into the Retrieval view's query box while its index of the folder is built (the
    bundled embedder on every chunk of the 1 MB document: the heaviest update there is)."""
    import shutil

    from textual.widgets import Input

    from ctxfst_tui.ui.widgets.retrieval.pane import RetrievalPane

    app = instrumented(ours_class())(folder)
    shutil.rmtree(folder / ".ctxfst-index", ignore_errors=True)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await pilot.press("6")
        pane = app.screen.query_one(RetrievalPane)
        await wait_until(pilot, lambda: pane.indexing, timeout)
        box = pane.query_one("#retrieval-query", Input)
        during = []

        def typed(widget):  # noqa: ANN001, ANN202 - the state a frame shows, and whether the index was updating
            during.append(pane.indexing)
            return input_state(widget)

        frames = await frame_latency(pilot, app, box, "letters", n, state=typed)
        indexing_frames = pane.indexing
        pilot_ = await pilot_latency(pilot, box, "letters", n)
        still = pane.indexing
    shutil.rmtree(folder / ".ctxfst-index", ignore_errors=True)
    return {"pilot": pilot_, "frame": frames, "indexing_throughout": bool(indexing_frames and still),
            "indexing_share": sum(during) / len(during) if during else 0.0}


async def bare_keys(folder: Path, size: tuple[int, int], n: int, load: tuple[float, bool] | None = None) -> dict:
    """The floor: the bare app's tree, ``down`` then ``up`` (so a short list never hits its end).

    ``load``: (step, cpu) — the same fake model streaming tokens in a plain thread meanwhile (no
    UI of its own): what a busy thread alone does to the driver's idle waits and the GIL."""
    import threading

    app = instrumented(bare_app_class())(folder)
    stop = threading.Event()
    calls = [0]
    thread = None
    if load is not None:
        backend = fake_backend_factory(load[0], load[1], calls)(None)

        def run() -> None:
            from ctxfst_tui.core.llm import Cancelled

            while not stop.is_set():
                try:
                    backend.complete("a prompt", max_tokens=48, cancel=stop, on_token=lambda t: None)
                except Cancelled:
                    return

        thread = threading.Thread(target=run, name="bench-fake-model", daemon=True)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        if thread is not None:
            thread.start()
            await wait_until(pilot, lambda: calls[0] > 0, 10)
        try:
            tree = tree_of(app)
            frames = await frame_latency(pilot, app, tree, "updown", n)
            pilot_ = await pilot_latency(pilot, tree, "updown", n)
        finally:
            stop.set()
    if thread is not None:
        thread.join(5)
    return {"pilot": pilot_, "frame": frames}


async def bare_input_keys(folder: Path, size: tuple[int, int], n: int) -> dict:
    """The floor of typing: a to z into a plain Textual ``Input`` under the bare app's tree."""
    from textual.widgets import Input

    app = instrumented(bare_app_class())(folder, query=True)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        box = app.query_one("#query", Input)
        frames = await frame_latency(pilot, app, box, "letters", n, state=input_state)
        pilot_ = await pilot_latency(pilot, box, "letters", n)
    return {"pilot": pilot_, "frame": frames}


async def viewer_keys(folder: Path, md: Path, size: tuple[int, int], n: int, timeout: float) -> dict:
    """A floor for the source view: the bare viewer's TextArea holding the same 1 MB text."""
    from textual.widgets import TextArea

    app = instrumented(bare_app_class())(folder, viewer=True)
    out: dict = {}
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await cursor_to(pilot, app, md)
        probe = bare_open_probe(app, md)
        await pilot.press("enter")
        await wait_until(pilot, lambda: all(probe()), timeout)
        await settle(pilot, app)
        area = app.query_one(TextArea)
        for key in ("down", "pagedown"):
            area.move_cursor((0, 0))
            area.scroll_to(0, 0, animate=False)
            await pilot.pause()
            frames = await frame_latency(pilot, app, area, key, n)
            pilot_ = await pilot_latency(pilot, area, key, n)
            out[key] = {"pilot": pilot_, "frame": frames}
    return out


# ---------------------------------------------------------------- memory (subprocesses)


def child_memory(mode: str, folder: str, novel: str, size: str, timeout: str) -> None:
    """In the child: peak RSS after starting (and, but for the bare tree, opening the novel)."""
    import asyncio

    w, h = (int(x) for x in size.split("x"))
    folder_p, novel_p = Path(folder), Path(novel)

    async def run() -> dict:
        if mode == "ours":
            app = instrumented(ours_class())(folder_p)
        else:
            app = instrumented(bare_app_class())(folder_p, viewer=(mode == "viewer"))
        res: dict = {}
        async with app.run_test(size=(w, h)) as pilot:
            await settle(pilot, app)
            res["started"] = rss_peak_mb()
            if mode != "bare":
                await cursor_to(pilot, app, novel_p)
                probe = ours_open_probe(app, novel_p) if mode == "ours" else bare_open_probe(app, novel_p)
                await pilot.press("enter")
                try:
                    await wait_until(pilot, lambda: all(probe()), float(timeout))
                    res["opened"] = True
                except Timeout:
                    res["opened"] = False
                await settle(pilot, app)
            res["peak"] = rss_peak_mb()
        return res

    print(json.dumps(asyncio.run(run())), flush=True)


def memory(mode: str, folder: Path, novel: Path, size: str, timeout: float) -> dict:
    import subprocess

    code = ("import sys, importlib.util as u\n"
            "s = u.spec_from_file_location('ctxfst_bench_tui', sys.argv[1]); m = u.module_from_spec(s); s.loader.exec_module(m)\n"
            "m.child_memory(*sys.argv[2:])\n")
    try:
        done = subprocess.run([sys.executable, "-c", code, str(THIS), mode, str(folder), str(novel), size, str(timeout)],
                              capture_output=True, text=True, timeout=timeout + 90, cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": (done.stderr or done.stdout)[-400:]}


# ---------------------------------------------------------------- the report


class Row:
    def __init__(self, what: str, ours, floor, unit: str, target: str | None = None,  # noqa: ANN001
                 limit: float | None = None, note: str = "", ours_p90=None, floor_p90=None) -> None:  # noqa: ANN001
        self.what, self.ours, self.floor, self.unit = what, ours, floor, unit
        self.target, self.limit, self.note = target, limit, note  # target: "abs" | "ratio" | None
        self.ours_p90, self.floor_p90 = ours_p90, floor_p90

    @property
    def ratio(self) -> float | None:
        if isinstance(self.ours, (int, float)) and isinstance(self.floor, (int, float)) and self.floor > 0:
            return self.ours / self.floor
        return None

    @property
    def met(self) -> bool | None:
        if self.target is None or self.limit is None:
            return None
        if not isinstance(self.ours, (int, float)):
            return False  # timeout / error
        if self.target == "abs":
            return self.ours <= self.limit
        r = self.ratio
        return None if r is None else r <= self.limit

    def fmt(self, v, p=None) -> str:  # noqa: ANN001
        if v is None:
            return "—"
        if isinstance(v, str):
            return v
        if self.unit == "s":
            s = f"{v:.2f} s"
        elif self.unit == "ms":
            s = f"{v * 1000:.0f}" + (f"/{p * 1000:.0f}" if p is not None else "") + " ms"
        elif self.unit == "MB":
            s = f"{v:.0f} MB"
        else:
            s = f"{v:.3g}"
        return s

    def target_text(self) -> str:
        if self.target == "abs":
            return f"≤ {self.limit:g} s" if self.unit == "s" else f"≤ {self.limit:g}"
        if self.target == "ratio":
            return f"≤ {self.limit:g}×"
        return "—"

    def to_json(self) -> dict:
        return {"what": self.what, "ours": self.ours, "floor": self.floor, "unit": self.unit,
                "ours_p90": self.ours_p90, "floor_p90": self.floor_p90, "ratio": self.ratio,
                "target": self.target_text(), "met": self.met, "note": self.note}


def print_table(rows: list[Row]) -> None:
    head = f"{'what':52} {'ours':>13} {'bare/floor':>13} {'ratio':>6}  {'target':8} met?"
    print(head)
    print("-" * len(head))
    for r in rows:
        if r.unit == "section":
            print(r.what)
            continue
        ratio = f"{r.ratio:.2f}" if r.ratio is not None else "—"
        met = {True: "yes", False: "NO", None: ""}[r.met]
        print(f"{r.what:52} {r.fmt(r.ours, r.ours_p90):>13} {r.fmt(r.floor, r.floor_p90):>13} {ratio:>6}  {r.target_text():8} {met}")
        if r.note:
            print(f"{'':4}{r.note}")


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    import argparse
    import asyncio
    import shutil
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and key presses")
    ap.add_argument("--json", action="store_true", help="print the measurements as JSON only")
    ap.add_argument("--size", default="120x40", help="terminal size WxH (default 120x40)")
    ap.add_argument("--keys", type=int, default=None, help="key presses per measurement (default 50, --quick 15)")
    ap.add_argument("--profile", action="store_true", help="where each open's time goes (timeline, UI stalls, cProfile)")
    ap.add_argument("--job-load", choices=("sleep", "cpu"), default="sleep",
                    help="the fake model's wait per token: sleep (default) or burn a core (GIL released)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds before a measurement counts as a timeout")
    args = ap.parse_args(argv)
    w, h = (int(x) for x in args.size.lower().split("x"))
    size = (w, h)
    n_keys = args.keys or (15 if args.quick else 50)
    start_repeats = 3 if args.quick else 7
    open_repeats = 1 if args.quick else 3
    step, cpu = 0.02, args.job_load == "cpu"
    log = (lambda *a: None) if args.json else (lambda *a: print(*a, file=sys.stderr, flush=True))

    def guarded(what: str, fn, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202 - a broken measurement is a row, not a crash
        try:
            return fn(*a, **k)
        except Exception as exc:  # noqa: BLE001
            log(f"  {what}: {type(exc).__name__}: {exc}")
            return {"error": f"{type(exc).__name__}: {exc}"}

    rows: list[Row] = []
    details: dict = {"size": args.size, "keys": n_keys, "python": sys.version.split()[0], "job_load": args.job_load}
    try:
        import textual

        details["textual"] = textual.__version__
    except Exception:  # noqa: BLE001
        pass

    def med_or(xs: list, missing: str = "timeout") -> float | str:
        return missing if not xs or all(x is None for x in xs) else median(xs)

    tmp = Path(tempfile.mkdtemp(prefix="ctxfst-bench-tui-"))
    try:
        docs = build_folder(tmp)

        # ---- memory first, while this process is small
        mem: dict = {}
        if docs is not None:
            log("memory …")
            mem = {m: memory(m, docs["folder"], docs["novel"], args.size, args.timeout) for m in ("ours", "bare", "viewer")}
            details["memory"] = mem

        # ---- cold start
        log("cold start …")
        starts: dict[str, dict[str, list]] = {}
        for mode in ("bare", "ours"):
            cold_start(mode, SAMPLES, args.size, args.timeout)  # warm-up: .pyc files, the OS file cache
            acc: dict[str, list] = {"first": [], "listed": [], "import": [], "child_listed": []}
            errors = []
            for _ in range(start_repeats):
                r = cold_start(mode, SAMPLES, args.size, args.timeout)
                ev, ch = r["events"], r["child"]
                if "listed" not in ev:
                    errors.append(f"no paint within {args.timeout:g} s" if r["rc"] == -9 else
                                  (r["stderr"].strip().splitlines() or [f"exit status {r['rc']}"])[-1])
                acc["first"].append(ev.get("first"))
                acc["listed"].append(ev.get("listed"))
                acc["import"].append(ch.get("import"))
                acc["child_listed"].append(ch.get("listed"))
            starts[mode] = acc
            if errors:
                details[f"start_errors_{mode}"] = errors[:2]
        interp = interpreter_start(start_repeats)
        details["interpreter_start"] = interp
        details["cold_start"] = starts
        err = details.get("start_errors_ours")
        rows.append(Row("Start-up (cold process, sample_docs/)", None, None, "section"))
        start_row = Row("  spawn → first paint showing the document list", med_or(starts["ours"]["listed"]),
                        med_or(starts["bare"]["listed"]), "s", "abs", TARGET_START,
                        note=(f"python -c 'import time' alone: {interp:.2f} s" if interp else "")
                        + (f"; failed: {err[0]}" if err else ""))
        rows.append(start_row)
        rows.append(Row("  spawn → first frame", med_or(starts["ours"]["first"]), med_or(starts["bare"]["first"]), "s"))
        rows.append(Row("  of which importing the app (child's clock)", med_or(starts["ours"]["import"]),
                        med_or(starts["bare"]["import"]), "s"))

        open_rows: list[Row] = []
        key_rows: list[Row] = []
        if docs is None:
            rows.append(Row(f"(no corpus at {CORPUS}: open, key and memory rows skipped)", None, None, "section"))
        else:
            details["documents"] = {k: {"name": p.name, "bytes": p.stat().st_size} for k, p in docs.items() if k != "folder"}

            # ---- opening
            rows.append(Row("Opening (Enter in the tree → source, summary, spans, tokens shown; floor: bare viewer)",
                            None, None, "section"))
            for key, label in (("md", "1 MB Markdown"), ("novel", "3 MB novel")):
                path = docs[key]
                log(f"open {label} …")
                ours_runs, bare_runs = [], []
                for _ in range(open_repeats):
                    bare_runs.append(guarded("bare open", lambda: asyncio.run(
                        open_once("bare", docs["folder"], path, size, args.timeout))))
                    ours_runs.append(guarded("open", lambda: asyncio.run(
                        open_once("ours", docs["folder"], path, size, args.timeout))))
                profiled = None
                if args.profile:  # an extra run: cProfile slows the UI thread, so it is not counted
                    profiled = guarded("profiled open", lambda: asyncio.run(
                        open_once("ours", docs["folder"], path, size, args.timeout, profile=True)))
                ours_t = med_or([r.get("total") for r in ours_runs], "error" if all("error" in r for r in ours_runs) else "timeout")
                bare_t = med_or([r.get("total") for r in bare_runs])
                parts = [median([(r.get("parts") or [None] * 4)[j] for r in ours_runs]) for j in range(4)]
                names = ("source", "summary", "spans", "tokens")
                note = "shown at: " + ", ".join(f"{n} {p:.2f} s" if p is not None else f"{n} timeout" for n, p in zip(names, parts))
                stalls = [s_ for r in ours_runs for s_ in (r.get("stalls") or [])]
                if stalls:
                    worst = max(stalls, key=lambda s_: s_[1])
                    note += f"; UI thread blocked up to {worst[1]:.2f} s"
                errors = [r["error"] for r in ours_runs if "error" in r]
                if errors:
                    note += f"; {errors[0]}"
                row = Row(f"  {label} ({path.stat().st_size / 1e6:.2f} MB)", ours_t, bare_t, "s", "abs", TARGET_OPEN, note=note)
                rows.append(row)
                open_rows.append(row)
                details[f"open_{key}"] = {"ours": ours_runs, "bare_viewer": bare_runs, "profiled": profiled}

            # ---- key latency
            log("key latency …")
            bare = guarded("bare keys", lambda: asyncio.run(bare_keys(docs["folder"], size, n_keys)))
            bare_load = guarded("bare keys under load", lambda: asyncio.run(bare_keys(docs["folder"], size, n_keys, (step, cpu))))
            viewer = guarded("viewer keys", lambda: asyncio.run(viewer_keys(docs["folder"], docs["md"], size, n_keys, args.timeout)))
            ours = guarded("keys", lambda: asyncio.run(ours_keys(docs["folder"], docs["md"], docs["runbook"], size, n_keys,
                                                               args.timeout, step, cpu)))
            details["key_latency"] = {"bare_tree": bare, "bare_tree_with_model_thread": bare_load, "bare_viewer": viewer, "ours": ours}

            def stat(d: dict, measure: str) -> tuple:
                xs = d.get(measure) or []
                return med_or(xs, "error" if "error" in d else "timeout"), p90(xs)

            for phase, title in (
                ("idle", "Key latency, 1 MB document open (median/p90 per key; floor: bare app's tree)"),
                ("job", f"Key latency during a model job (fake model: {args.job_load} {step * 1000:.0f} ms + Python work per token)"),
            ):
                rows.append(Row(title, None, None, "section"))
                ui = ours.get(f"{phase}:ui")
                if ui:
                    rows.append(Row(f"    (meanwhile, keys untouched: {ui['frames_per_s']:.0f} frames/s, UI thread "
                                    f"{100 * ui['ui_thread_cpu']:.0f}% of a core, process {100 * ui['process_cpu']:.0f}%)",
                                    None, None, "section"))
                for measure, label in (("pilot", "press+pause"), ("frame", "key → frame")):
                    floor, fp90 = stat(bare, measure)
                    for name in ("source", "preview"):
                        for key in ("down", "pagedown"):
                            got = ours.get(f"{phase}:{name}:{key}")
                            if got is None:
                                val, vp90 = ("error" if "error" in ours else "timeout"), None
                            else:
                                val, vp90 = stat(got, measure)
                            notes = []
                            if got is not None and any(x is None for x in got[measure]):
                                notes.append(f"{sum(1 for x in got[measure] if x is None)} of {len(got[measure])} keys showed no change")
                            if name == "source" and isinstance(viewer.get(key), dict):
                                v, vp = stat(viewer[key], measure)
                                if isinstance(v, float):
                                    notes.append(f"bare TextArea with the same text: {v * 1000:.0f}/{(vp or 0) * 1000:.0f} ms")
                            quiet = ours.get(f"{phase}:{name}:{key}:no-animation")
                            if quiet:
                                v, vp = stat(quiet, measure)
                                if isinstance(v, float):
                                    notes.append(f"with animation_level 'none' (no scroll animation): {v * 1000:.0f}/{(vp or 0) * 1000:.0f} ms")
                            if phase == "job" and key == "down" and name == "source":
                                b, bp = stat(bare_load, measure)
                                if isinstance(b, float):
                                    notes.append(f"bare tree with the fake model in a plain thread: {b * 1000:.0f}/{(bp or 0) * 1000:.0f} ms")
                            # the target is on the driver's measure; key → frame is shown for what it tells
                            row = Row(f"  {label}: {name} {key}", val, floor, "ms",
                                      "ratio" if measure == "pilot" else None, TARGET_KEY_RATIO if measure == "pilot" else None,
                                      note="; ".join(notes), ours_p90=vp90, floor_p90=fp90)
                            rows.append(row)
                            if measure == "pilot":
                                key_rows.append(row)
            if "job_calls" in ours:
                details["job_model_calls"] = ours["job_calls"]

            log("typing in the Retrieval view while its index is built …")
            typing = guarded("retrieval keys", lambda: asyncio.run(retrieval_keys(docs["folder"], size, n_keys, args.timeout)))
            bare_typing = guarded("bare input keys", lambda: asyncio.run(bare_input_keys(docs["folder"], size, n_keys)))
            details["key_latency"]["retrieval_typing"] = typing
            details["key_latency"]["bare_input_typing"] = bare_typing
            rows.append(Row("Typing in the Retrieval view while the index of the folder is built "
                            "(floor: typing into a plain Input in the bare app)", None, None, "section"))
            for measure, label in (("pilot", "press+pause"), ("frame", "key → frame")):
                floor, fp90 = stat(bare_typing, measure)
                val, vp90 = stat(typing, measure) if "error" not in typing else ("error", None)
                note = ("index building throughout" if typing.get("indexing_throughout")
                        else f"index building for {100 * typing.get('indexing_share', 0):.0f}% of the frames")
                tree_floor, _ = stat(bare, measure)
                if isinstance(tree_floor, float):
                    note += f"; bare app's tree up/down: {tree_floor * 1000:.1f} ms"
                row = Row(f"  {label}: query box, a to z", val, floor, "ms",
                          "ratio" if measure == "pilot" else None, TARGET_KEY_RATIO if measure == "pilot" else None,
                          note=note, ours_p90=vp90, floor_p90=fp90)
                rows.append(row)
                if measure == "pilot":
                    key_rows.append(row)

            # ---- memory rows
            rows.append(Row("Memory (peak RSS, each in its own process)", None, None, "section"))
            m_ours = mem.get("ours", {})
            ours_peak = m_ours.get("peak") if m_ours.get("opened") else m_ours.get("error", "timeout")
            if isinstance(ours_peak, str) and len(ours_peak) > 12:
                ours_peak = "error"
            rows.append(Row("  after opening the 3 MB novel (floor: bare tree app)", ours_peak,
                            mem.get("bare", {}).get("peak", "error"), "MB",
                            note=f"ours after start, before opening: {m_ours.get('started', 0):.0f} MB; "
                                 f"bare viewer with the novel loaded: {mem.get('viewer', {}).get('peak', 0):.0f} MB"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    measured = [r for r in rows if r.target is not None]
    met = [r for r in measured if r.met]
    worst_key = max((r.ratio for r in key_rows if r.ratio is not None), default=None)
    bits = [f"{len(met)} of {len(measured)} targets met"]
    if isinstance(start_row.ours, float):
        bits.append(f"cold start {start_row.ours:.2f} s")
    if open_rows:
        bits.append("opens " + " / ".join(r.fmt(r.ours) for r in open_rows))
    if worst_key is not None:
        bits.append(f"worst key latency {worst_key:.2f}× the bare app (press+pause)")
    summary = "; ".join(bits)
    if args.json:
        print(json.dumps({"rows": [r.to_json() for r in rows if r.unit != "section"], "summary": summary,
                          "details": details}, indent=1, default=str))
    else:
        print(f"ctxfst-tui workbench: Textual {details.get('textual', '?')}, headless {args.size}, "
              f"{n_keys} keys a row, {start_repeats} cold starts, {open_repeats} open(s) per document (medians)")
        print_table(rows)
        if args.profile:
            print_profiles(details)
        print(summary)
    return 0 if len(met) == len(measured) else 1


def print_profiles(details: dict) -> None:
    for key in ("md", "novel"):
        run = details.get(f"open_{key}", {}).get("profiled")
        if not run or not run.get("profile"):
            continue
        total = f"{run['total']:.2f} s" if isinstance(run.get("total"), float) else "timeout"
        print(f"\nwhere the time of opening the {key} goes (an extra run under cProfile: {total}; +start s, took s, thread):")
        for label, thread, start, took in run["profile"]["steps"]:
            print(f"  +{start:6.3f}  {took:6.3f}  {thread[:24]:24} {label}")
        if run.get("stalls"):
            print("  UI thread stalls (+s: length): " + ", ".join(f"+{t:.2f}: {g:.2f} s" for t, g in run["stalls"]))
        print("  UI thread, cProfile by own time:")
        for line in run["profile"]["ui_cprofile"]:
            print("    " + line)


if __name__ == "__main__":
    sys.exit(main())
