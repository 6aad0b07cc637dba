"""``export`` of a document made by the reference's contextualize_chunks.py: the records are the
reference export's (the comment stays in ``content``, ``context`` comes from the frontmatter) and a
one-line warning on stderr names the file, line and chunk of every ``<!-- Context: -->`` comment."""
from __future__ import annotations

import json
from pathlib import Path

from ctxfst_tui.cli import main

DOC = """\
---
chunks:
  - id: note:empty
    tags: [A]
    context: ""
  - id: note:same
    tags: [B]
    context: "Release checklist for the mobile app store submissions and review steps"
  - id: note:differs
    tags: [C]
    context: "Incident review notes for the payment outage of March"
  - id: note:plain
    tags: [D]
    context: "Plain chunk with an ordinary HTML comment that is not a context at all"
---

<Chunk id="note:empty">
<!-- Context: Onboarding guide for new backend engineers joining the platform team -->

Read the runbook first, then pair with the on-call engineer for a week.
</Chunk>

<Chunk id="note:same">
<!-- Context: Release checklist for the mobile app store submissions and review steps -->

Bump the build number, upload the bundle, answer the review questions.
</Chunk>

<Chunk id="note:differs">
<!-- Context: Postmortem of the checkout latency spike -->

Timeline, root cause and follow-up actions.
</Chunk>

<Chunk id="note:plain">
<!-- TODO: add the diagram -->

Nothing to see here yet.
</Chunk>
"""


def test_export_keeps_the_reference_records_and_warns_once_per_comment(tmp_path: Path, capsys) -> None:
    doc = tmp_path / "notes.md"
    doc.write_text(DOC, encoding="utf-8")
    out = tmp_path / "chunks.json"
    capsys.readouterr()
    assert main(["export", str(doc), "--output", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    chunks = json.loads(out.read_text(encoding="utf-8"))["chunks"]
    by_id = {c["id"]: c for c in chunks}
    assert list(by_id) == ["note:empty", "note:same", "note:differs", "note:plain"]
    # as export_to_lancedb.py: the context is the frontmatter's, the comment is part of the content
    assert by_id["note:empty"]["context"] == ""
    assert by_id["note:empty"]["content"].startswith("<!-- Context: Onboarding guide for new backend engineers")
    assert by_id["note:differs"]["context"] == "Incident review notes for the payment outage of March"
    assert by_id["note:differs"]["content"] == ("<!-- Context: Postmortem of the checkout latency spike -->\n\n"
                                                "Timeline, root cause and follow-up actions.")
    warnings = [line for line in err if line.startswith("warning:")]
    lines = [n for n, line in enumerate(DOC.splitlines(), 1) if line.startswith("<!-- Context:")]
    assert [w.split(" ")[1] for w in warnings] == [f"{doc}:{n}:" for n in lines] and lines[0] == 18
    assert ["note:empty" in warnings[0], "note:same" in warnings[1], "note:differs" in warnings[2]] == [True] * 3
    assert "empty context" in warnings[0] and "diagnose --apply" in warnings[0]
    assert "both" in warnings[1]
    assert "different" in warnings[2] and "frontmatter's is exported" in warnings[2]
    assert not any("note:plain" in line for line in err)


def test_export_bytes_are_the_same_with_or_without_the_warning(tmp_path: Path) -> None:
    """The warning is on stderr only: the file is what the reference writes for these records."""
    doc = tmp_path / "notes.md"
    doc.write_text(DOC, encoding="utf-8")
    out = tmp_path / "chunks.json"
    assert main(["export", str(doc), "--output", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert out.read_bytes() == json.dumps(data, ensure_ascii=False).encode("utf-8")
    assert all(c["source"] == str(doc) for c in data["chunks"])
