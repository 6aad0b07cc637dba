"""Shared fixtures: the conformance folder beside the checkout and a set of hostile files."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CONFORMANCE_DOCS = SHARED / "conformance" / "docs"
SAMPLE_DOCS = ROOT / "sample_docs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Files that must never make the tool print a traceback.
HOSTILE_FILES: dict[str, bytes] = {
    "empty.md": b"",
    "whitespace.md": b"  \n\n",
    "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01",
    "latin1.md": "---\ntitle: caf\xe9\n---\n\n<Chunk id=\"a:b\">x</Chunk>\n".encode("latin-1"),
    "truncated.md": b"---\ntitle: \"Cut short\"\nentities:\n  - id: entity:a\n    name: A\n",
    "chunks-mapping.md": b"---\ntitle: t\nchunks:\n  a:b:\n    context: x\n---\n\n<Chunk id=\"a:b\">\nx\n</Chunk>\n",
    "entities-scalar.md": b"---\nentities: 3\nchunks: [1, \"two\", {context: x}]\n---\n",
    "frontmatter-list.md": b"---\n- a\n- b\n---\nbody\n",
    "broken-yaml.md": b"---\ntitle: [unclosed\n---\nbody\n",
    "bom-only.md": b"\xef\xbb\xbf",
}


@pytest.fixture
def hostile_dir(tmp_path: Path) -> Path:
    for name, data in HOSTILE_FILES.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


def conformance_docs() -> list[Path]:
    return sorted(CONFORMANCE_DOCS.glob("*.md")) if CONFORMANCE_DOCS.is_dir() else []


@pytest.fixture(autouse=True)
def _private_config(tmp_path_factory, monkeypatch):
    """Every test gets its own config and state dirs: a developer's key remaps or theme must not
    change what tests see, and a test's quit must not write the real state file."""
    base = tmp_path_factory.mktemp("user-dirs")
    monkeypatch.setenv("CTXFST_TUI_CONFIG_DIR", str(base / "config"))
    monkeypatch.setenv("CTXFST_TUI_STATE_DIR", str(base / "state"))
