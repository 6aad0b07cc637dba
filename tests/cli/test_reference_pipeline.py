"""The reference's README pipeline on its ch22 example, run with our CLI, gives the reference's files.

validate -> export -> profiles -> graph on ../shared/retrieval/ch22/benchmark.ctxfst.md. The
reference's outputs for that document (the same bytes as ../shared/conformance/docs/
ref-ch22-benchmark.ctxfst.md) are in ../shared/conformance/expected/ref-ch22-benchmark.ctxfst.json,
stored as JSON with ``meta.input`` taken out; the reference writes its files with
``json.dump(data, f, ensure_ascii=False)`` (export) and ``indent=2`` (profiles, graph), ``meta.input``
first, no final newline, so its files are rebuilt here byte for byte and compared with ours.
The document is given as ``docs/ref-ch22-benchmark.ctxfst.md``, the path the reference was given
(export's ``source`` is the path as given).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SHARED

CH22 = SHARED / "retrieval" / "ch22" / "benchmark.ctxfst.md"
EXPECTED = SHARED / "conformance" / "expected" / "ref-ch22-benchmark.ctxfst.json"
DOC = "docs/ref-ch22-benchmark.ctxfst.md"

pytestmark = pytest.mark.skipif(not (CH22.is_file() and EXPECTED.is_file()), reason="../shared is not beside the checkout")


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxfst_tui", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def reference_file(data: dict, given: str | None = None) -> bytes:
    """The bytes the reference script writes: export compact; profiles and graph indent 2, meta.input first."""
    if given is None:
        return json.dumps(data, ensure_ascii=False).encode("utf-8")
    data = {**data, "meta": {"input": given, **data["meta"]}}
    return json.dumps(data, indent=2, ensure_ascii=False).encode("utf-8")


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory) -> tuple[Path, dict, list[subprocess.CompletedProcess]]:
    here = tmp_path_factory.mktemp("ch22")
    (here / "docs").mkdir()
    shutil.copyfile(CH22, here / DOC)
    steps = [
        cli(here, "validate", DOC),
        cli(here, "export", DOC, "--output", "chunks.json"),
        cli(here, "profiles", "chunks.json", "--output", "entity-profiles.json"),
        cli(here, "graph", "entity-profiles.json", "--output", "entity-graph.json"),
        cli(here, "graph", "chunks.json", "--output", "entity-graph-from-export.json"),
    ]
    return here, json.loads(EXPECTED.read_text(encoding="utf-8")), steps


def test_every_step_succeeds(pipeline):
    _, expected, steps = pipeline
    for p in steps:
        assert p.returncode == 0, f"{p.args[3:]}: exit {p.returncode}: {p.stderr}"
    assert expected["validate"] == {"valid": True, "errors": 0, "warnings": 0, "body_lines": []}
    assert steps[0].stdout.strip().endswith("1 file checked: 0 errors, 0 warnings — valid")


def test_export_is_the_reference_file(pipeline):
    here, expected, _ = pipeline
    assert (here / "chunks.json").read_bytes() == reference_file(expected["export"])


def test_profiles_are_the_reference_file(pipeline):
    here, expected, _ = pipeline
    assert (here / "entity-profiles.json").read_bytes() == reference_file(expected["profiles"], "chunks.json")


def test_graph_is_the_reference_file(pipeline):
    here, expected, _ = pipeline
    assert (here / "entity-graph.json").read_bytes() == reference_file(expected["graph_from_profiles"],
                                                                      "entity-profiles.json")
    assert (here / "entity-graph-from-export.json").read_bytes() == reference_file(expected["graph_from_export"],
                                                                                  "chunks.json")
