"""`eval` prints the reference benchmark's two methods beside ours. Without the reference's expansion
tables (they are its code, not in this repository) their scores on ../shared/retrieval are pinned
here as measured; with them (`--expansions` its ch22_retrieval_benchmark.py) the same runs print its
published numbers: ch22 17/18 and 18/18, career-kb 7/18 and 18/18 (profiles and graph rebuilt)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxfst_tui.cli import main

SHARED = Path(__file__).resolve().parents[3] / "shared" / "retrieval"


def run_eval(capsys, tmp_path, source: Path, queries: Path, *extra: str) -> dict:
    """``ctxfst-tui eval … --json`` in this process (the CLI's ``main``; a child would only add
    the interpreter's start and imports)."""
    capsys.readouterr()
    status = main(["eval", str(source), str(queries), "--db", str(tmp_path / "db"),
                   "--embed", "none", "--no-translate", "--json", *extra])
    out = capsys.readouterr()
    assert status == 0, out.err
    return {m["name"]: m for m in json.loads(out.out)["methods"]}


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/retrieval is not here")
def test_both_benchmarks_without_the_tables_and_with_a_table_of_our_own(tmp_path, capsys):
    """Measured here; with the reference's own tables (--expansions its script) the same runs print
    its published 17/18 and 18/18 (ch22) and 7/18 and 18/18 (career-kb, graph rebuilt)."""
    ch22 = run_eval(capsys, tmp_path / "a", SHARED / "ch22" / "benchmark.ctxfst.md", SHARED / "ch22" / "queries.yaml")
    assert [(ch22[m]["hits"], ch22[m]["recovered"]) for m in ("reference-tfidf", "reference-entity")] == [(6, 15), (6, 16)]
    kb = run_eval(capsys, tmp_path / "b", SHARED / "career-kb" / "chunks.json", SHARED / "career-kb" / "queries.yaml")
    assert [(kb[m]["hits"], kb[m]["recovered"]) for m in ("reference-tfidf", "reference-entity")] == [(3, 7), (3, 7)]
    tables = tmp_path / "tables.yaml"
    tables.write_text("entity:\n  資料庫: [database, storage, postgresql, rocksdb]\n  後端: [backend, service, api]\n",
                      encoding="utf-8")
    better = run_eval(capsys, tmp_path / "c", SHARED / "ch22" / "benchmark.ctxfst.md", SHARED / "ch22" / "queries.yaml",
                      "--expansions", str(tables))
    assert better["reference-tfidf"]["recovered"] == 15  # its table is empty in this file
    assert better["reference-entity"]["recovered"] > 16
