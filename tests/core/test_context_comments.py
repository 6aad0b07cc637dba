"""Contexts written into the body by the reference's contextualize_chunks.py: diagnosis finds the
``<!-- Context: -->`` comment, its fix moves it into the frontmatter byte-exactly, a comment that
disagrees with the frontmatter gets no fix, and other HTML comments are left alone."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ctxfst_tui.core.diagnosis.diagnose import diagnose_workspace
from ctxfst_tui.core.workspace.fixes import FixError, apply_fix, apply_fixes, collect_fixes, describe_fix
from ctxfst_tui.core.workspace.workspace import Workspace

# A document as it was before the contextualize script ran.
ORIGINAL = """\
---
title: Skills
chunks:
  - id: skill:python
    tags: [Python, Backend]
    context: ""
  - id: skill:sql
    tags: [SQL]
---

# Skills

<Chunk id="skill:python">
## Python

I build REST APIs with FastAPI and write async workers that move data between services.
</Chunk>

<Chunk id="skill:sql">
## SQL

Window functions, query plans and indexes for the reporting database.
</Chunk>
"""

PY_CONTEXT = "Python backend skills: REST APIs with FastAPI and async workers for the data platform"
SQL_CONTEXT = "SQL skills for reporting: window functions, query plans and indexing"


def contextualized(text: str, contexts: dict[str, str]) -> str:
    """``text`` as contextualize_chunks.py writes it: its chunk regex and its
    ``<Chunk id="...">\\n<!-- Context: ... -->\\n\\n{content}\\n</Chunk>`` template."""
    pattern = re.compile(r'<Chunk\s+id=["\']([^"\']+)["\']>\s*(.*?)\s*</Chunk>', re.DOTALL | re.IGNORECASE)

    def one(m: re.Match) -> str:
        return f'<Chunk id="{m.group(1)}">\n<!-- Context: {contexts[m.group(1)]} -->\n\n{m.group(2).strip()}\n</Chunk>'

    return pattern.sub(one, text)


def load(tmp_path: Path, text: str, newline: str = "\n", bom: bool = False) -> Workspace:
    data = ("\ufeff" if bom else "") + text.replace("\n", newline)
    (tmp_path / "doc.md").write_bytes(data.encode("utf-8"))
    return Workspace.load(tmp_path)


def issues(ws: Workspace) -> list[dict]:
    return diagnose_workspace(ws.docs, "fix")[0]["issues"]


def by_rule(ws: Workspace, rule: str) -> list[dict]:
    return [i for i in issues(ws) if i["rule"] == rule]


def test_a_comment_with_an_empty_context_is_found_with_a_fix(tmp_path: Path) -> None:
    text = contextualized(ORIGINAL, {"skill:python": PY_CONTEXT, "skill:sql": SQL_CONTEXT})
    ws = load(tmp_path, text)
    found = by_rule(ws, "context-in-comment")
    assert [(i["chunk_ids"], i["severity"]) for i in found] == [(["skill:python"], "warning"), (["skill:sql"], "warning")]
    first = found[0]
    assert text.splitlines()[first["line"] - 1] == f"<!-- Context: {PY_CONTEXT} -->"
    assert first["fix"] == {"op": "move_context_comment", "chunk_id": "skill:python", "context": PY_CONTEXT,
                            "replaces": ""}
    # context-empty points to the same move rather than to a draft
    empty = by_rule(ws, "context-empty")
    assert [i["fix"] for i in empty if i["chunk_ids"] == ["skill:python"]] == [first["fix"]]
    assert "\n" not in describe_fix(first["fix"]) and "skill:python" in describe_fix(first["fix"])


@pytest.mark.parametrize("newline, bom", [("\n", False), ("\r\n", False), ("\r\n", True)], ids=["lf", "crlf", "crlf-bom"])
def test_the_fixes_give_back_the_original_with_the_contexts_in_the_frontmatter(
        tmp_path: Path, newline: str, bom: bool) -> None:
    text = contextualized(ORIGINAL, {"skill:python": PY_CONTEXT, "skill:sql": SQL_CONTEXT})
    ws = load(tmp_path, text, newline, bom)
    doc = ws.docs[0]
    raw = doc.encoded()
    run = apply_fixes(ws, collect_fixes(diagnose_workspace(ws.docs, "fix")))
    assert sorted(f["chunk_id"] for f, _ in run.applied) == ["skill:python", "skill:sql"]
    expected = (ORIGINAL
                .replace('    context: ""\n', f'    context: "{PY_CONTEXT}"\n')
                .replace("    tags: [SQL]\n", f'    tags: [SQL]\n    context: "{SQL_CONTEXT}"\n'))
    assert doc.encoded() == (("\ufeff" if bom else "") + expected.replace("\n", newline)).encode("utf-8")
    assert by_rule(ws, "context-in-comment") == [] and by_rule(ws, "context-empty") == []
    for _fix, record in reversed(run.applied):
        record.undo(ws)
    assert doc.encoded() == raw


def test_a_multi_line_comment_becomes_one_line_of_context(tmp_path: Path) -> None:
    text = contextualized(ORIGINAL, {"skill:python": "Python backend skills:\nREST APIs with FastAPI\n  and async workers",
                                     "skill:sql": SQL_CONTEXT})
    ws = load(tmp_path, text)
    fix = by_rule(ws, "context-in-comment")[0]["fix"]
    assert fix["context"] == "Python backend skills: REST APIs with FastAPI and async workers"
    apply_fix(ws, fix, ws.docs[0].path)
    after = ws.docs[0].text
    assert '    context: "Python backend skills: REST APIs with FastAPI and async workers"\n' in after
    assert '<Chunk id="skill:python">\n## Python\n' in after and "<!--" not in after.split("skill:sql\">")[0]


def test_the_same_context_in_both_places_only_loses_the_comment(tmp_path: Path) -> None:
    start = ORIGINAL.replace('    context: ""\n', f'    context: "{PY_CONTEXT}"\n')
    ws = load(tmp_path, contextualized(start, {"skill:python": "  " + PY_CONTEXT.replace(" ", "\n", 1),
                                               "skill:sql": SQL_CONTEXT}))
    found = [i for i in by_rule(ws, "context-in-comment") if i["chunk_ids"] == ["skill:python"]]
    assert len(found) == 1 and "both" in found[0]["message"]
    apply_fix(ws, found[0]["fix"], ws.docs[0].path)
    text = ws.docs[0].text
    assert text.split("---\n\n")[0] == start.split("---\n\n")[0]  # the frontmatter is untouched
    assert '<Chunk id="skill:python">\n## Python\n\nI build' in text
    with pytest.raises(FixError, match="no longer opens"):
        apply_fix(ws, found[0]["fix"], ws.docs[0].path)


def test_a_comment_that_disagrees_has_no_fix(tmp_path: Path) -> None:
    start = ORIGINAL.replace('    context: ""\n', f'    context: "{PY_CONTEXT}"\n')
    ws = load(tmp_path, contextualized(start, {"skill:python": "Python for data pipelines and ETL jobs",
                                               "skill:sql": SQL_CONTEXT}))
    conflict = by_rule(ws, "context-conflict")
    assert [(i["chunk_ids"], i["severity"]) for i in conflict] == [(["skill:python"], "warning")]
    assert "fix" not in conflict[0] and "frontmatter" in conflict[0]["message"]
    assert [i["chunk_ids"] for i in by_rule(ws, "context-in-comment")] == [["skill:sql"]]
    with pytest.raises(FixError, match="changed since"):
        apply_fix(ws, {"op": "move_context_comment", "chunk_id": "skill:python",
                       "context": "Python for data pipelines and ETL jobs", "replaces": ""}, ws.docs[0].path)


def test_a_comment_on_the_open_tag_line_leaves_the_tag_on_its_own_line(tmp_path: Path) -> None:
    text = ORIGINAL.replace('<Chunk id="skill:python">\n', f'<Chunk id="skill:python"><!-- Context: {PY_CONTEXT} -->\n\n')
    ws = load(tmp_path, text)
    apply_fix(ws, by_rule(ws, "context-in-comment")[0]["fix"], ws.docs[0].path)
    assert ws.docs[0].text == ORIGINAL.replace('    context: ""\n', f'    context: "{PY_CONTEXT}"\n')


@pytest.mark.parametrize("body", [
    "<!-- TODO: split this chunk -->\n\n## Python\n",  # an author's own comment
    "## Python\n\n<!-- Context: further down -->\n",  # not where the script writes it
    "<!-- Context: followed by text --> on the same line\n",
    "<!-- Context: -->\n\n## Python\n",  # nothing in it
])
def test_other_html_comments_are_not_contexts(tmp_path: Path, body: str) -> None:
    text = ORIGINAL.replace('<Chunk id="skill:python">\n## Python\n', '<Chunk id="skill:python">\n' + body)
    ws = load(tmp_path, text)
    assert by_rule(ws, "context-in-comment") == [] and by_rule(ws, "context-conflict") == []
    empty = [i for i in by_rule(ws, "context-empty") if i["chunk_ids"] == ["skill:python"]]
    assert empty and empty[0]["fix"]["op"] == "set_context"
