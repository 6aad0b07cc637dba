"""The CLI's counts say "1 chunk" and "2 chunks", never "1 chunks", "chunk(s)" or "entit(y/ies)"."""
from __future__ import annotations

from pathlib import Path

from ctxfst_tui.cli import main

ONE = ('---\ntitle: "One"\nentities:\n  - id: entity:helm\n    name: Helm\n    type: tool\nchunks:\n'
       '  - id: ops:deploy\n    entities: [entity:helm]\n'
       '    context: "How the team deploys a release of the service to the cluster with Helm charts."\n---\n\n'
       '<Chunk id="ops:deploy">\nWe deploy with Helm: helm upgrade --install, then watch the rollout.\n</Chunk>\n')
PLAIN = "# Deploys\n\nDeploys go out on Tuesdays after the standup, never on Fridays.\n"


def lines_of(capsys, *args) -> list[str]:
    capsys.readouterr()
    main([str(a) for a in args])
    out, err = capsys.readouterr()
    text = out + err
    assert "(s)" not in text and "(es)" not in text and "(y/ies)" not in text, text
    return (out + err).splitlines()


def test_one_of_each_is_counted_in_the_singular(tmp_path, capsys):
    doc = tmp_path / "one.md"
    doc.write_text(ONE, encoding="utf-8")
    note = tmp_path / "note.md"
    note.write_text(PLAIN, encoding="utf-8")
    assert lines_of(capsys, "validate", doc)[-1] == "1 file checked: 0 errors, 0 warnings — valid"
    assert lines_of(capsys, "export", doc, "--output", tmp_path / "out.json")[-1] == (
        f"exported 1 chunk and 1 entity from 1 file to {tmp_path / 'out.json'}")
    assert lines_of(capsys, "diagnose", doc)[-1].startswith("1 file diagnosed: ")
    assert lines_of(capsys, "entities", "list", doc)[-1] == "1 entity"
    assert lines_of(capsys, "chunk", note)[-1].startswith("1 chunk, ")
    target = tmp_path / "note.ctxfst.md"
    assert lines_of(capsys, "convert", note)[-1] == (
        f"wrote {target}: 1 chunk; fill in each chunk's context and the entities next")


def test_two_files_are_counted_in_the_plural(tmp_path, capsys):
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text(ONE.replace("ops:deploy", f"ops:{name[0]}"), encoding="utf-8")
    assert lines_of(capsys, "validate", tmp_path)[-1] == "2 files checked: 0 errors, 0 warnings — valid"
    assert lines_of(capsys, "diagnose", tmp_path)[-1].startswith("2 files diagnosed: ")
    assert lines_of(capsys, "export", tmp_path, "--output", tmp_path / "out.json")[-1] == (
        f"exported 2 chunks and 1 entity from 2 files to {tmp_path / 'out.json'}")


def test_missing_entity_fields_are_counted(tmp_path, capsys):
    doc = tmp_path / "fields.md"
    doc.write_text(ONE.replace("    name: Helm\n    type: tool\n", "    name: Helm\n"), encoding="utf-8")
    assert "Entity definition 1 missing required field 'type'" in "\n".join(lines_of(capsys, "validate", doc))
    doc.write_text(ONE.replace("    name: Helm\n    type: tool\n", ""), encoding="utf-8")
    assert "Entity definition 1 missing required fields 'name', 'type'" in "\n".join(lines_of(capsys, "validate", doc))


def test_no_message_in_the_package_hedges_a_plural():
    """Every count goes through core.text.plural: no string says "chunk(s)" (http(s) is a URL)."""
    import io
    import re
    import tokenize

    import ctxfst_tui

    hedge = re.compile(r"[a-z]\((?:s|es|y/ies)\)")
    strings = {tokenize.STRING} | ({tokenize.FSTRING_MIDDLE} if hasattr(tokenize, "FSTRING_MIDDLE") else set())
    found = []
    for path in Path(ctxfst_tui.__file__).parent.rglob("*.py"):
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
            text = re.sub(r"\{[^{}]*\}", "", tok.string).replace("http(s)", "")  # not an f-string's code
            if tok.type in strings and not text.lstrip("rbuf").startswith(('"""', "'''")) and hedge.search(text):
                found.append(f"{path.name}:{tok.start[0]}: {tok.string}")
    assert found == []
