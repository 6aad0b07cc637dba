"""``index``, ``query`` and ``eval`` in-process through ``main`` (real LanceDB, no model)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ctxfst_tui.cli import main

SHARED = Path(__file__).resolve().parents[3] / "shared"
CH22 = SHARED / "retrieval" / "ch22"
pytestmark = pytest.mark.skipif(not CH22.is_dir(), reason="../shared/retrieval not beside the checkout")


@pytest.fixture
def ch22(tmp_path):
    folder = tmp_path / "ch22"
    folder.mkdir()
    shutil.copy(CH22 / "benchmark.ctxfst.md", folder)
    shutil.copy(CH22 / "queries.yaml", folder)
    return folder


def test_index_query_and_eval_without_vectors(ch22, capsys):
    assert main(["index", str(ch22), "--embed", "none"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("indexed 8 chunks (0 embedded") and ".ctxfst-index" in out
    assert (ch22 / ".ctxfst-index").is_dir()

    assert main(["index", str(ch22), "--embed", "none"]) == 0  # again: nothing to embed, nothing removed
    assert "0 removed" in capsys.readouterr().out

    assert main(["query", str(ch22), "How do gRPC services run in Kubernetes?", "--json", "-k", "3", "--no-translate"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert set(answer) == {"query", "mode", "translated", "results"} and answer["mode"] == "auto"
    first = answer["results"][0]
    assert set(first) == {"rank", "chunk_id", "document", "breadcrumb", "score", "signals", "terms", "entities", "content", "context"}
    assert first["document"] == "benchmark.ctxfst.md" and "grpc" in first["terms"]
    assert any(e["matched"] in ("gRPC", "Kubernetes") for r in answer["results"] for e in r["entities"])

    assert main(["query", str(ch22), "gRPC", "--mode", "bm25", "-k", "2", "--no-translate"]) == 0
    text = capsys.readouterr().out
    assert "mode: bm25 · 2 results" in text and "signals  bm25" in text

    assert main(["eval", str(ch22), str(ch22 / "queries.yaml"), "--json", "--no-translate"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["k"] == 3 and scores["queries"] == 6
    assert [m["name"] for m in scores["methods"]] == [  # no vectors: no vector method
        "reference-tfidf", "reference-entity", "bm25", "entity", "hybrid", "default"]
    assert scores["expansions"] is None
    assert all(len(m["per_query"]) == 6 for m in scores["methods"])


def test_errors_are_one_line_naming_the_file(ch22, tmp_path, capsys):
    assert main(["query", str(ch22), "anything", "--no-translate"]) == 2
    err = capsys.readouterr().err
    assert "no index here" in err and len(err.strip().splitlines()) == 1

    assert main(["index", str(ch22), "--embed", "none"]) == 0
    capsys.readouterr()
    assert main(["query", str(ch22), "anything", "--mode", "vector", "--no-translate"]) == 2
    assert "has no vectors" in capsys.readouterr().err

    bad = tmp_path / "q.yaml"
    bad.write_text("queries:\n  - id: a\n    query: x\n")
    assert main(["eval", str(ch22), str(bad)]) == 2
    assert "q.yaml:2: query 'a' needs expected_entities" in capsys.readouterr().err

    assert main(["index", str(ch22), "--embed", "word2vec"]) == 2
    assert "unknown embedder 'word2vec'" in capsys.readouterr().err
