"""What a person reads of a big diagnosis: at most GROUP_OVER single lines a rule, the rest one line;
an entity declared differently across documents one line; --json keeps every finding."""
from __future__ import annotations

import json
from pathlib import Path

from ctxfst_tui.cli import main
from ctxfst_tui.cli.documents import _print_findings
from ctxfst_tui.core.diagnosis.grouping import GROUP_OVER, SHOWN, Group, More, group_findings, readable_findings


def _issue(rule: str, chunks: list[str], message: str, **extra) -> dict:
    return {"category": "c", "severity": "warning", "chunk_ids": chunks, "message": message, "rule": rule,
            "line": 3, "column": 5, **extra}


def _tags(n: int) -> list[tuple[str, dict]]:
    """``n`` identical-tag findings, each its own tag set (none repeated), one file each."""
    return [(f"d{k}.md", _issue("tags-identical", [f"c{k}-0", f"c{k}-1"], f"Identical tags: ['{_tag(k)}']"))
            for k in range(n)]


def _tag(k: int) -> str:
    """A tag of letters only (numbers in a message are masked when findings are compared)."""
    return "".join("abcdefghij"[int(d)] for d in str(k))


def _pair(file: str, a: str, b: str, cosine: float) -> tuple[str, dict]:
    return (file, _issue("similar-chunks", [a, b], f"{a} and {b} are similar", cosine=cosine, jaccard=0.0,
                         shared_terms=["kafka"]))


def test_a_rule_with_a_few_more_lines_than_the_budget_is_printed_as_it_is() -> None:
    items = _tags(GROUP_OVER + SHOWN)
    assert readable_findings(items) == group_findings(items) == items


def test_past_the_budget_the_rest_of_a_rule_is_one_line_at_its_first() -> None:
    items = _tags(GROUP_OVER + 30)
    other = ("x.md", _issue("chunk-small", ["x"], "Chunk is small (5 tokens)"))
    out = readable_findings([*items[:GROUP_OVER + 1], other, *items[GROUP_OVER + 1:]])
    assert out[:GROUP_OVER] == items[:GROUP_OVER]
    more, kept = out[GROUP_OVER:]
    assert kept == other and isinstance(more, More) and more.members == items[GROUP_OVER:]
    assert more.message() == "… and 30 more findings like those above, the first: Identical tags: ['ca']"
    names, what = more.names()
    assert what == "findings" and names[:2] == ["d20.md c20-0", "d21.md c21-0"]


def test_pairs_past_the_budget_are_counted_by_kind_and_cluster() -> None:
    near = [_pair("a.md", f"n{k}", f"m{k}", 0.95) for k in range(40)]  # 40 clusters of one pair
    chain = [_pair("a.md", f"s{k}", f"s{k + 1}", 0.6) for k in range(GROUP_OVER)]  # one cluster of 20
    lone = [_pair("a.md", f"t{k}", f"u{k}", 0.6) for k in range(10)]
    out = readable_findings(near + chain + lone)
    rests = [x for x in out if isinstance(x, More)]
    assert [len(x.members) for x in rests] == [40 - GROUP_OVER, 10]
    assert rests[0].message().startswith(
        "… and 20 more near-duplicate pairs in 20 smaller clusters (20 of one pair; similarity 95%)")
    assert rests[1].message().startswith("… and 10 more similar pairs in 10 smaller clusters (10 of one pair;")
    assert sum(1 for x in out if not isinstance(x, Group)) == 2 * GROUP_OVER


def _entities_doc(etype: str, n: int) -> str:
    ents = "".join(f"  - id: entity:e{k}\n    name: Thing{k}\n    type: {etype}\n" for k in range(n))
    links = ", ".join(f"entity:e{k}" for k in range(n))
    return (f"---\ntitle: t\nentities:\n{ents}chunks:\n  - id: x:{etype}\n    context: \"Things of type {etype}\"\n"
            f"    entities: [{links}]\n---\n\n<Chunk id=\"x:{etype}\">\n"
            + " ".join(f"Thing{k}" for k in range(n)) + "\n</Chunk>\n")


def _entities_workspace(tmp_path: Path, n: int, types: tuple[str, ...]) -> Path:
    for k, etype in enumerate(types):
        (tmp_path / f"{k}.md").write_text(_entities_doc(etype, n), encoding="utf-8")
    return tmp_path


def _run(capsys, *args) -> str:
    capsys.readouterr()
    main([str(a) for a in args])
    return capsys.readouterr().out


def test_entities_declared_differently_in_many_documents_are_one_line_each(tmp_path, capsys) -> None:
    path = _entities_workspace(tmp_path, 30, ("tool", "skill", "concept"))
    out = _run(capsys, "diagnose", "--level", "fix", path)
    lines = [line for line in out.splitlines() if "[entity-inconsistent]" in line]
    assert len(lines) == 30  # 60 findings, two for each entity
    assert lines[0].endswith(
        "1.md:6:5: warning [entity-inconsistent] Entity 'entity:e0' is type 'tool' in "
        f"{tmp_path}/0.md but type 'skill' in 1 file, type 'concept' in 1 file — 2 files ("
        f"{tmp_path}/1.md, {tmp_path}/2.md)")
    after = out.splitlines()[out.splitlines().index(lines[0]) + 1:][:2]
    assert after[1] == "    fix: set type 'tool' of entity:e0 (and 1 like it)"
    # --json: every finding, one per document and entity
    reports = json.loads(_run(capsys, "diagnose", "--json", path))
    found = [i for r in reports for i in r["issues"] if i["rule"] == "entity-inconsistent"]
    assert len(found) == 60 and not any("members" in i for i in found)


def test_few_entities_declared_differently_print_as_before(tmp_path, capsys) -> None:
    path = _entities_workspace(tmp_path, 10, ("tool", "skill"))
    lines = [line for line in _run(capsys, "diagnose", path).splitlines() if "[entity-inconsistent]" in line]
    assert len(lines) == 10
    assert lines[3].endswith(f"Entity 'entity:e3' has type 'skill' here but 'tool' in {tmp_path}/0.md (entity:e3)")


def test_one_finding_about_many_chunks_names_its_first(capsys) -> None:
    ids = [f"part-{k}" for k in range(GROUP_OVER + 1)]
    few = ids[:GROUP_OVER]
    reports = [{"filepath": "big.md", "issues": [_issue("tags-identical", ids, "Identical tags: ['Rust']"),
                                                 _issue("tags-identical", few, "Identical tags: ['Go']")]}]
    assert _print_findings(reports, "diagnose") == 2
    many, some = capsys.readouterr().out.splitlines()
    assert many.endswith("Identical tags: ['Rust'] (part-0, part-1, part-2, part-3, part-4 … and 16 more)")
    assert some.endswith(f"Identical tags: ['Go'] ({', '.join(few)})")


def test_the_rest_of_a_rule_shows_the_first_fix_and_says_each_has_its_own(capsys) -> None:
    n = GROUP_OVER + SHOWN + 1
    issues = [_issue("context-empty", [f"c{k}"], f"Chunk '{_tag(k)}' has an empty context",
                     suggestion="Write a context.", fix={"op": "set_context", "chunk_id": f"c{k}", "context": "x"})
              for k in range(n)]
    assert _print_findings([{"filepath": "a.md", "issues": issues}], "fix") == n
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 * (GROUP_OVER + 1)
    rest, suggestion, fix = lines[-3:]
    assert rest.endswith(f"[context-empty] … and {SHOWN + 1} more findings like those above, the first: "
                         f"Chunk 'ca' has an empty context — {SHOWN + 1} findings (first 5: c20, c21, c22, c23, c24 … "
                         "and 1 more)")
    assert suggestion == "    suggestion: Write a context."
    assert fix.startswith("    fix: ") and fix.endswith(f" (the first's; each of the {SHOWN} others has its own)")
