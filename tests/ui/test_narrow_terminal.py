"""The workbench at 80×24 and 120×40 with the tree shown (issue #16, defects 3, 4, 7 and 8):
every pane's lines fit its width (cut with … where they must be), the Source view wraps prose,
the status and job lines keep what matters, and tab moves between panes.

One app walks the 80×24 cases, then the same app is resized to 120×40."""
from __future__ import annotations

import shutil
from pathlib import Path

from rich.cells import cell_len
from textual.widgets import Tabs

from conftest import SAMPLE_DOCS
from ctxfst_tui.services.jobs import Job, JobProgress
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.modals.diff import DiffScreen
from ctxfst_tui.ui.widgets.chunks.chunk_map import ChunkMap
from ctxfst_tui.ui.widgets.chunks.preview import ChunkPreview
from ctxfst_tui.ui.widgets.diagnosis.pane import DiagnosisTree
from ctxfst_tui.ui.widgets.document.source_view import SourceView
from ctxfst_tui.ui.widgets.document.tree import DocumentTree
from ctxfst_tui.ui.widgets.entities.panel import ClusterList, EntityTable
from ctxfst_tui.ui.widgets.jobs.status import JobStatus
from ctxfst_tui.ui.widgets.status_bar import StatusBar
from pilot import open_document, settle, started, until

NOVEL = "novels/paragraphs-on-one-line.txt"
RUNBOOK = "platform-runbook.ctxfst.md"

# An entity whose aliases grow: the Aliases column must not squeeze the Documents column away.
MANY_ALIASES = """---
title: "Caches compared"
entities:
  - id: entity:redis
    name: Redis
    type: database
    aliases: [Remote Dictionary Server, redis-server, redis-sentinel, redis-cluster, KeyDB, Valkey]
chunks:
  - id: reference:caches
    tags: [Cache]
    entities: [entity:redis]
    context: "Which cache servers the platform runs and how they are compared"
---

<Chunk id="reference:caches">
## Caches

Redis and its forks.
</Chunk>
"""


# A note whose longest line (78 characters) fits the Chunks pane at 120 columns.
SHORT_LINES = "# Short lines\n\n" + "".join(
    f"Line {i:>2} of a note whose lines all fit the chunk map at a hundred and twenty.\n"[:78] + "\n"
    for i in range(40))


def folder(tmp_path: Path) -> Path:
    """sample_docs/, plus the first novel with each paragraph on one line (as many novels are)."""
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLE_DOCS, docs)
    text = (SAMPLE_DOCS / "novels" / "pride-and-prejudice-ch1-3.txt").read_text(encoding="utf-8")
    paragraphs = [" ".join(p.split("\n")) for p in text.split("\n\n")]
    (docs / NOVEL).write_text("\n\n".join(paragraphs), encoding="utf-8")
    (docs / "short-lines.md").write_text(SHORT_LINES, encoding="utf-8")
    return docs


def lines_of(widget) -> list[str]:
    """The widget's lines as drawn on screen (its whole region, border and scrollbars included)."""
    strips = widget.app.screen._compositor.render_strips()
    r = widget.region
    return [strips[y].crop(r.x, r.right).text for y in range(r.y, r.bottom)]


def screen_lines(app) -> list[str]:
    return [s.text for s in app.screen._compositor.render_strips()]


async def check_the_tree_leaves_the_views_room_and_every_tab_label_shows(app, pilot, width: int) -> None:
    screen = app.screen
    tree = screen.query_one(DocumentTree)
    assert tree.outer_size.width <= (24 if width <= 80 else 30), tree.outer_size.width
    tabs = screen.query_one(Tabs)
    for tab in tabs.query("Tab"):
        assert tab.region.right <= tabs.region.right, f"tab {tab.label} cut at {width} columns"
    assert "Retrieval" in screen_lines(app)[tabs.region.y]


async def check_the_source_wraps_prose_and_w_turns_it_off(app, pilot) -> None:
    screen = app.screen
    await open_document(app, pilot, NOVEL)
    await pilot.press("1")
    await settle(app, pilot)
    sv = screen.query_one(SourceView)
    assert sv.soft_wrap
    text_lines = sv.text.split("\n")
    # a paragraph on one line, three to six times as wide as the view (its rows fit on screen)
    longest = next(i for i, line in enumerate(text_lines) if 3 * sv.size.width < len(line) < 6 * sv.size.width)
    paragraph = text_lines[longest]
    assert sv.max_scroll_x == 0  # nothing to scroll sideways: it is wrapped
    sv.goto(longest + 1, 1)
    await pilot.pause()
    shown = " ".join(line.strip(" │") for line in lines_of(sv))
    words = paragraph.split()
    assert words[-1] in shown and words[len(words) // 2] in shown  # the end of it is on screen too
    assert all(cell_len(line) <= sv.outer_size.width for line in lines_of(sv))
    # The key is in the footer; w turns wrapping off (long lines scroll sideways) and on again.
    assert any(b.binding.key == "w" and b.binding.show for b in screen.active_bindings.values()
               if b.node is sv)
    sv.focus()
    await pilot.press("w")
    await pilot.pause()
    assert not sv.soft_wrap and sv.max_scroll_x > 0
    await pilot.press("w")
    await pilot.pause()
    assert sv.soft_wrap and sv.max_scroll_x == 0
    assert sv.cursor_location[0] == longest


async def check_the_status_bar_keeps_the_token_count(app, pilot) -> None:
    bar = app.screen.query_one(StatusBar)
    await until(pilot, lambda: "tokens" in bar.text)
    drawn = lines_of(bar)[0]
    assert "tokens" in drawn and "…" not in drawn, drawn


async def check_the_job_line_keeps_esc_cancels_on_one_line(app, pilot) -> None:
    status = app.screen.query_one(JobStatus)
    job = Job("summarize", app.folder / NOVEL, NOVEL, model="/home/someone/models/gemma-3-270m-it-Q8_0.gguf",
              scope="the book")
    status.start(job)
    status.show_progress(JobProgress(job, phase="loading"))
    await pilot.pause(0.3)
    await pilot.pause()
    assert status.outer_size.height == 1
    drawn = lines_of(status)[0]
    assert "esc cancels" in drawn, drawn
    status.finish()
    await pilot.pause()


async def check_the_chunks_controls_show_their_stats_and_tab_leaves_the_pane(app, pilot, lines_fit: bool) -> None:
    screen = app.screen
    await open_document(app, pilot, "short-lines.md" if lines_fit else RUNBOOK)
    await pilot.press("2")
    await settle(app, pilot)
    preview = screen.query_one(ChunkPreview)
    stats = preview.query_one("#preview-stats")
    await until(pilot, lambda: " chunk" in str(stats.render()))
    drawn = "\n".join(lines_of(preview))
    count = str(stats.render()).split(" · ")[0]  # "3 chunks"
    assert count in drawn, (count, drawn)
    chunk_map = preview.query_one(ChunkMap)
    # The map's vertical scrollbar sits against the pane's border.
    assert chunk_map.region.right == preview.region.right - 1, (chunk_map.region, preview.region)
    if lines_fit:
        assert chunk_map.max_scroll_x == 0
        assert chunk_map.scrollable_content_region.height == chunk_map.content_region.height
    # Tab leaves the chunks for the next pane after at most two stops inside it.
    chunk_map.focus()
    await pilot.pause()
    stops = 0
    for _ in range(8):
        await pilot.press("tab")
        focused = app.focused
        if focused is None or preview not in focused.ancestors_with_self:
            break
        stops += 1
    assert stops <= 1, f"{stops} tab stops inside the Chunks pane"
    chunk_map.focus()


async def check_every_entity_column_shows(app, pilot, readable: int) -> None:
    screen = app.screen
    await pilot.press("3")
    await settle(app, pilot)
    table = screen.query_one(EntityTable)
    await until(pilot, lambda: len(table.ids) >= 6)
    await pilot.pause()
    assert table.max_scroll_x == 0
    header = lines_of(table)[1]
    for name in ("Id", "Name", "Type", "Chunks", "Documents"):
        assert name in header, header
    # The aliases have their own column, or (at 80 columns) follow the name in its column.
    assert "Aliases" in header or "Name (a…" in header, header
    assert all(line.endswith(("│", "╮", "╯")) for line in lines_of(table))
    # The Documents column keeps part of a name readable however long the aliases grow.
    redis = str(table.get_row("entity:redis")[-1])
    assert len(redis.split(",")[0].rstrip("…+0123456789 ")) >= readable, redis


async def check_diagnosis_rows_end_with_an_ellipsis(app, pilot) -> None:
    screen = app.screen
    await pilot.press("4")
    await settle(app, pilot)
    tree = screen.query_one(DiagnosisTree)
    await until(pilot, lambda: len(tree.items) > 0)
    await pilot.pause()
    assert tree.max_scroll_x == 0
    rows = [line.strip("│ ") for line in lines_of(tree)]
    assert any(row.endswith("…") for row in rows), rows


LONG_DIFF = """--- runbook.md
+++ runbook.md
@@ -12,3 +12,3 @@
   - id: reference:deploy
-    context: "How the orders service is deployed to Kubernetes with Helm, and how a failed rollout is rolled back"
+    context: "How the orders service is deployed to K8s with Helm, and how a failed rollout is rolled back by the on-call engineer"
     entities: [entity:kubernetes]
"""


async def check_merge_diff_lines_end_with_an_ellipsis(app, pilot) -> None:
    screen = app.screen
    await pilot.press("3")
    await settle(app, pilot)
    screen.query_one(ClusterList).focus()
    await pilot.press("m")  # a real merge's diff first: it opens and fits
    await until(pilot, lambda: isinstance(app.screen, DiffScreen))
    await pilot.pause()
    assert app.screen.query_one("#diff-scroll").max_scroll_x == 0
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(app.screen, DiffScreen))
    app.push_screen(DiffScreen("Merge entity:k8s into entity:kubernetes", LONG_DIFF))  # lines wider than 80
    await until(pilot, lambda: isinstance(app.screen, DiffScreen))
    await pilot.pause()
    scroll = app.screen.query_one("#diff-scroll")
    assert scroll.max_scroll_x == 0
    rows = [line.strip("│ ") for line in lines_of(scroll)]
    cut = [row for row in rows if row.startswith(("-    context", "+    context"))]
    assert len(cut) == 2 and all(row.endswith("…") for row in cut), rows
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(app.screen, DiffScreen))


async def test_at_80x24_and_120x40_with_the_tree_shown_nothing_is_cut_silently(tmp_path):
    docs = folder(tmp_path)
    (docs / "caches.ctxfst.md").write_text(MANY_ALIASES, encoding="utf-8")
    app = WorkbenchApp(docs)
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await check_the_tree_leaves_the_views_room_and_every_tab_label_shows(app, pilot, 80)
        await check_the_source_wraps_prose_and_w_turns_it_off(app, pilot)
        await check_the_status_bar_keeps_the_token_count(app, pilot)
        await check_the_job_line_keeps_esc_cancels_on_one_line(app, pilot)
        await check_the_chunks_controls_show_their_stats_and_tab_leaves_the_pane(app, pilot, lines_fit=False)
        await check_every_entity_column_shows(app, pilot, readable=5)
        await check_diagnosis_rows_end_with_an_ellipsis(app, pilot)
        await check_merge_diff_lines_end_with_an_ellipsis(app, pilot)

        await pilot.resize_terminal(120, 40)
        await settle(app, pilot)
        await check_the_tree_leaves_the_views_room_and_every_tab_label_shows(app, pilot, 120)
        await check_the_status_bar_keeps_the_token_count(app, pilot)
        await check_the_chunks_controls_show_their_stats_and_tab_leaves_the_pane(app, pilot, lines_fit=True)
        await check_every_entity_column_shows(app, pilot, readable=12)
