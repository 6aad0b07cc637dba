"""The Retrieval view's state without the UI: a real LanceDB index in a temp dir, built from the
session's in-memory documents, re-scored after each edit, queries added to queries.yaml."""
from __future__ import annotations

from pathlib import Path

import json

import pytest
from conftest import held_session
import yaml

from ctxfst_tui.core.retrieval.embedders import BundledEmbedder
from ctxfst_tui.core.retrieval.evaluate import load_queries
from ctxfst_tui.core.workspace.entity_ops import add_alias
from ctxfst_tui.services.retrieval import RetrievalError, RetrievalService, split_expected



@pytest.fixture
def folder(retrieval_folder: Path) -> Path:
    return retrieval_folder


def _board(service: RetrievalService) -> dict[str, tuple[bool, int | None]]:
    return {r.id: (r.hit, r.first_rank) for r in service.scoreboard}


def test_the_scoreboard_scores_the_folders_queries_and_an_alias_flips_one(folder):
    session = held_session(folder)
    service = RetrievalService(folder)  # no embedder: full-text and entity signals
    first = service.refresh(session.snapshots())
    assert first.stats.chunks == 3 and first.changes == []
    assert _board(service) == {"q1-wal": (True, 1), "q2-ecmascript": (False, None)}
    assert [r.mark for r in service.scoreboard] == ["✓", "✗"]

    record = session.run(add_alias, "entity:javascript", "ECMAScript")  # in memory, not saved
    after = service.refresh(session.snapshots(), record.description)
    assert after.changes == ["q2-ecmascript ✗ → ✓ after add alias 'ECMAScript' to entity:javascript"]
    assert _board(service)["q2-ecmascript"] == (True, 1)
    assert service.history == after.changes
    assert "ECMAScript" not in (folder / "langs.ctxfst.md").read_text()  # the index followed the unsaved edit
    top = service.search("ECMAScript").results[0]
    assert top.chunk_id == "lang:js" and top.entities[0].matched == "ECMAScript"
    assert service.location(top.key) == (folder / "langs.ctxfst.md", "lang:js")

    session.undo_last()
    undone = service.refresh(session.snapshots(), "undo")
    assert undone.changes == ["q2-ecmascript ✓ → ✗ after undo"]


def test_why_not_this_one_gives_the_breakdown_of_a_chunk_that_did_not_come_back(folder):
    service = RetrievalService(folder)
    with pytest.raises(RetrievalError, match="still being built"):
        service.search("anything")
    service.refresh(held_session(folder).snapshots())
    answer = service.search("write-ahead log", k=1)
    assert [r.chunk_id for r in answer.results] == ["lang:db"]
    assert answer.results[0].signals and "write" in answer.results[0].terms
    why = service.explain("write-ahead log", "lang:rust")
    assert why is not None and why.chunk_id == "lang:rust" and why.score == 0.0 and why.signals == {}
    db = service.explain("write-ahead log", "lang:db")
    assert db.rank == 1 and db.score > 0
    assert service.explain("write-ahead log", "no:such") is None
    assert service.chunk_ids() == ["lang:db", "lang:js", "lang:rust"]


def test_a_query_added_in_the_view_is_appended_to_queries_yaml_and_scored(folder):
    service = RetrievalService(folder)
    service.refresh(held_session(folder).snapshots())
    before = (folder / "queries.yaml").read_text()
    q = service.add_query("garbage collector", "entity:rust")
    assert q.id == "q3"
    text = (folder / "queries.yaml").read_text()
    assert text.startswith(before)  # comments and the other queries' extra fields kept as written
    assert [x.id for x in load_queries(folder / "queries.yaml")] == ["q1-wal", "q2-ecmascript", "q3"]
    assert yaml.safe_load(text)["queries"][2] == {"id": "q3", "query": "garbage collector",
                                                  "expected_entities": ["entity:rust"]}
    assert _board(service)["q3"] == (True, 1)
    service.add_query("prototypes", "lang:js")
    assert load_queries(folder / "queries.yaml")[-1].expected_chunks == ["lang:js"]
    with pytest.raises(RetrievalError, match="which entities"):
        service.add_query("no expectation", "")
    # the next re-index re-reads the file: the added queries stay on the board
    service.refresh(held_session(folder).snapshots(), "save")
    assert list(_board(service)) == ["q1-wal", "q2-ecmascript", "q3", "q4"]


def test_a_folder_without_queries_yaml_gets_one_on_the_first_added_query(folder):
    (folder / "queries.yaml").unlink()
    service = RetrievalService(folder)
    service.refresh(held_session(folder).snapshots())
    assert service.scoreboard == []
    service.add_query("borrowing", "entity:rust")
    assert [q.id for q in load_queries(folder / "queries.yaml")] == ["q1"]


def test_a_broken_queries_file_is_reported_and_the_index_still_built(folder):
    (folder / "queries.yaml").write_text("queries: [unclosed\n")
    service = RetrievalService(folder)
    got = service.refresh(held_session(folder).snapshots())
    assert got.stats.chunks == 3 and "queries.yaml" in got.queries_error and service.scoreboard == []


def test_split_expected_tells_entities_from_chunks():
    assert split_expected("entity:go, skill:go-runtime;entity:grpc") == (["entity:go", "entity:grpc"], ["skill:go-runtime"])


def test_with_the_bundled_embedder_an_edited_context_re_embeds_one_chunk(folder):
    service = RetrievalService(folder, embedder_factory=BundledEmbedder)
    session = held_session(folder)
    cold = service.refresh(session.snapshots())
    assert (cold.stats.embedded, cold.stats.reused) == (3, 0)
    snaps = [(p, raw.replace(b"Where the data lives.", b"Where rows are stored durably.")) for p, raw in session.snapshots()]
    warm = service.refresh(snaps, "context lang:db")
    assert (warm.stats.embedded, warm.stats.reused) == (1, 2)
    assert service.search("durable storage of rows", mode="vector", k=1).results[0].chunk_id == "lang:db"


def test_a_first_index_from_the_service_writes_no_lancedb_warning_to_stderr(folder):
    """Textual draws on stderr: LanceDB's Rust WARN lines ("No existing dataset at … it will be
    created", one per new table) must not reach it on the view's path (a fresh process, a new index)."""
    import os
    import subprocess
    import sys

    script = (
        "import sys; from pathlib import Path\n"
        "from ctxfst_tui.services.retrieval import RetrievalService\n"
        "from ctxfst_tui.core.workspace.workspace import Workspace\n"
        "from ctxfst_tui.services.session import Session\n"
        "root = Path(sys.argv[1]); s = Session(root); s.adopt(Workspace.load(root))\n"
        "svc = RetrievalService(root); r = svc.refresh(s.snapshots())\n"
        "print(r.stats.chunks, len(svc.search('write-ahead log').results))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LANCEDB_LOG"}
    got = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True, text=True, env=env, timeout=300)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["3", "1"]
    assert (folder / ".ctxfst-index" / "chunks.lance").is_dir()  # tables were created…
    assert "WARN" not in got.stderr and "No existing dataset" not in got.stderr  # …silently


# ---------------------------------------------------------------- the index keeps its own embedder
class _RecordedGguf:
    """Stands for an index made with ``--embed gguf:FILE`` whose file has since gone: a GGUF embedder
    as the index records it (name, source), with fixed vectors."""

    name = "gguf:notes-embed.gguf:0123456789ab"
    dim = 4

    def __init__(self, path: Path):
        self.source = f"gguf:{path}"

    def embed_passages(self, texts, *, cancel=None, progress=None):
        import numpy as np

        return np.tile(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))

    def embed_query(self, text):
        return self.embed_passages([text])[0]


def test_the_view_updates_an_index_with_the_embedder_it_was_built_with(folder):
    from ctxfst_tui.core.retrieval.index import default_uri, index_meta
    from ctxfst_tui.ui.screens.workbench.retrieval import folder_embedder

    assert index_meta(default_uri(folder)) is None and not (folder / ".ctxfst-index").exists()  # nothing created
    assert folder_embedder(folder).name.startswith("bundled:all-MiniLM-L6-v2:")  # a new index: the bundled one

    session = held_session(folder)
    RetrievalService(folder).refresh(session.snapshots())  # as `ctxfst-tui index --embed none` leaves it
    assert index_meta(default_uri(folder))["embedder"] == "none"
    assert folder_embedder(folder) is None  # not the bundled one: that would re-embed the whole index
    record = session.run(add_alias, "entity:javascript", "ECMAScript")
    service = RetrievalService(folder, embedder_factory=lambda: folder_embedder(folder))
    service.refresh(session.snapshots(), record.description)
    assert index_meta(default_uri(folder))["embedder"] == "none"


def test_an_index_whose_gguf_has_gone_is_left_as_it_is_and_says_why(folder, tmp_path):
    from ctxfst_tui.core.retrieval.bundled_embedder import EmbedderUnavailable
    from ctxfst_tui.core.retrieval.index import default_uri, index_meta
    from ctxfst_tui.ui.screens.workbench.retrieval import folder_embedder

    gone = tmp_path / "models" / "notes-embed.gguf"
    session = held_session(folder)
    built = RetrievalService(folder, embedder_factory=lambda: _RecordedGguf(gone)).refresh(session.snapshots())
    assert built.stats.embedded == 3
    meta = index_meta(default_uri(folder))
    assert (meta["embedder"], meta["embedder_source"]) == (_RecordedGguf.name, f"gguf:{gone}")

    with pytest.raises(EmbedderUnavailable, match="no such embedding model file"):
        folder_embedder(folder)
    service = RetrievalService(folder, embedder_factory=lambda: folder_embedder(folder))
    with pytest.raises(EmbedderUnavailable):
        service.refresh(session.snapshots())
    assert index_meta(default_uri(folder)) == meta  # not rebuilt with the bundled model behind the user's back


def test_the_cli_keeps_an_index_s_embedder_unless_told_and_refuses_another_for_a_query(folder, capsys):
    from ctxfst_tui.cli import main
    from ctxfst_tui.core.retrieval.index import default_uri, index_meta

    assert main(["index", str(folder), "--embed", "none"]) == 0
    assert main(["index", str(folder)]) == 0  # re-run without --embed: the index's own, nothing re-embedded
    assert "(0 embedded, 0 unchanged, 0 removed)" in capsys.readouterr().out
    assert index_meta(default_uri(folder))["embedder"] == "none"
    assert main(["query", str(folder), "write-ahead log", "--no-translate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"]

    gone = folder / "models" / "notes-embed.gguf"
    RetrievalService(folder, embedder_factory=lambda: _RecordedGguf(gone)).refresh(held_session(folder).snapshots())
    capsys.readouterr()
    assert main(["query", str(folder), "write-ahead log", "--mode", "vector", "--embed", "bundled", "--no-translate"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"was indexed with {_RecordedGguf.name}, not bundled:all-MiniLM-L6-v2" in err and len(err.splitlines()) == 1
    assert main(["query", str(folder), "write-ahead log", "--mode", "vector", "--no-translate"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no such embedding model file" in err and str(gone) in err and len(err.splitlines()) == 1


# ---------------------------------------------------------------- questions in another script
def test_a_question_in_another_script_is_translated_once_and_a_failing_model_is_not_asked_again(folder):
    asked: list[tuple[str, str]] = []

    def translator(question, target, cancel=None):
        asked.append((question, target))
        return {"哪種語言講所有權？": "Which language has ownership?"}.get(question)

    service = RetrievalService(folder, translator=translator)
    service.refresh(held_session(folder).snapshots())
    answer = service.search("哪種語言講所有權？", k=3)
    assert answer.translated == "Which language has ownership?"
    assert answer.results[0].chunk_id == "lang:rust"
    service.search("哪種語言講所有權？", k=3)
    assert service.search("ownership", k=3).translated is None  # the notes' own script: never translated
    assert asked == [("哪種語言講所有權？", "English")]  # asked once, the English one never

    def broken(question, target, cancel=None):
        asked.append((question, target))
        raise RuntimeError("the model's self-test crashed (SIGILL)")

    service = RetrievalService(folder, translator=broken)
    service.refresh(held_session(folder).snapshots())
    assert service.search("哪種語言講所有權？", k=3).translated is None
    assert service.translation_problem == "not translated (the model's self-test crashed (SIGILL))"
    service.search("資料庫", k=3)
    assert asked[1:] == [("哪種語言講所有權？", "English")]  # a failed model is not asked again
