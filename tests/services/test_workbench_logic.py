"""What the workbench screen asks of the core: the chunks linking an entity, an alias edit as
operations, which files are manuscripts (tested here without a UI)."""
from __future__ import annotations

from pathlib import Path

from ctxfst_tui.core.format.document import Document
from ctxfst_tui.core.summary.manuscript import is_manuscript
from ctxfst_tui.core.workspace.alias_diff import diff_aliases
from ctxfst_tui.core.workspace.entity_links import chunks_linking
from ctxfst_tui.core.workspace.workspace import Workspace

DOC = """\
---
title: "Ops"
entities:
  - id: entity:redis
    name: Redis
    type: technology
    aliases: [redis-server, Redis Cache]
  - id: entity:postgres
    name: PostgreSQL
    type: technology
chunks:
  - id: ops:cache
    context: "Caching."
    entities: [entity:redis]
  - id: ops:db
    context: "The database."
    entities: [entity:postgres, entity:redis]
  - id: ops:none
    context: "Nothing linked."
---

<Chunk id="ops:cache">
Redis caches sessions.
</Chunk>

<Chunk id="ops:db">
PostgreSQL holds the rest; Redis fronts it.
</Chunk>

<Chunk id="ops:none">
Plain words.
</Chunk>
"""


def test_chunks_linking_names_the_chunks_whose_links_list_the_entity() -> None:
    doc = Document(DOC.encode(), Path("ops.md"))
    assert chunks_linking(doc, "entity:redis") == {"ops:cache", "ops:db"}
    assert chunks_linking(doc, "entity:postgres") == {"ops:db"}
    assert chunks_linking(doc, "entity:nowhere") == set()


def test_chunks_linking_of_no_document_or_a_broken_one_is_empty() -> None:
    assert chunks_linking(None, "entity:redis") == set()
    broken = Document(DOC.replace('title: "Ops"', "title: [unclosed").encode(), Path("broken.md"))
    assert broken.data is None
    assert chunks_linking(broken, "entity:redis") == set()


def test_alias_diff_ignores_case_and_blanks_and_orders_removals_first() -> None:
    diff = diff_aliases("entity:redis", ["redis-server", "Redis Cache"], ["REDIS-SERVER ", "KeyDB"])
    assert diff.removed == ("Redis Cache",) and diff.added == ("KeyDB",)
    assert diff.description == "add KeyDB; remove Redis Cache (aliases of entity:redis)"
    assert [(step.__name__, args) for step, args, _ in diff.steps] == [
        ("remove_alias", ("entity:redis", "Redis Cache")), ("add_alias", ("entity:redis", "KeyDB"))]
    assert not diff_aliases("entity:redis", ["a", "B"], ["b", "A"])  # only the case changed: nothing to do


def test_alias_diff_steps_apply_to_a_workspace() -> None:
    ws = Workspace([Document(DOC.encode(), Path("ops.md"))])
    diff = diff_aliases("entity:redis", ["redis-server", "Redis Cache"], ["redis-server", "KeyDB"])
    for step, args, kwargs in diff.steps:
        step(ws, *args, **kwargs)
    [row] = [e for e in ws.entity_table() if e.id == "entity:redis"]
    assert row.aliases == ["redis-server", "KeyDB"]


def test_manuscripts_are_plain_text_and_markdown_but_not_ctxfst() -> None:
    assert is_manuscript(Path("novels/story.txt")) and is_manuscript(Path("Notes.MD"))
    assert not is_manuscript(Path("runbook.ctxfst.md")) and not is_manuscript(Path("RUNBOOK.CTXFST.MD"))
    assert not is_manuscript(Path("report.pdf")) and not is_manuscript(None)


# ---------------------------------------------------------------- what the model jobs ask of the services
# (moved from test_model_jobs.py: no App needed)


def test_settings_for_the_bundled_model_and_a_gguf_file(tmp_path) -> None:
    from ctxfst_tui.core.llm.settings import ModelSettings
    from ctxfst_tui.services.jobs import ModelService

    assert ModelSettings().backend_kwargs() == {"n_ctx": None, "n_threads": None}
    gguf = ModelSettings("gguf", model_path=str(tmp_path / "m.gguf"), n_threads=2)
    assert gguf.backend_kwargs()["model_path"].endswith("m.gguf") and gguf.describe() == "m.gguf"
    info = ModelService(settings=ModelSettings(n_ctx=1024, n_threads=3)).info()  # nothing created or loaded
    assert info["backend"] == "llama" and info["context_size"] == 1024 and info["threads"] == 3 and not info["loaded"]


async def test_progress_is_coalesced() -> None:
    import asyncio
    import time

    from ctxfst_tui.services.jobs import Job, JobProgress, Reporter

    posted: list[JobProgress] = []
    job = Job("contextualize", Path("x.md"), "x.md", total=1000)
    reporter = Reporter(job, posted.append, interval=0.1)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.5:
        reporter.token("word ")
        await asyncio.sleep(0)
    assert 3 <= len(posted) <= 7  # about ten a second, however fast the tokens come
