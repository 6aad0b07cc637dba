"""Similar-chunk pairs as a person reads them: a pair of two files once, a cluster of many pairs as
one finding with its count and chunks (every member kept in --json), fixes still one per member."""
from __future__ import annotations

import json
from pathlib import Path

from ctxfst_tui.cli import main
from ctxfst_tui.core.diagnosis.grouping import GROUP_OVER, Group, group_findings, group_report_issues

NEAR = ("Rebalancing Kafka consumer groups when partitions move between brokers and offsets lag behind",
        "A consumer group rebalance reassigns partitions; committed offsets decide where each consumer resumes "
        "and lag grows while the rebalance runs.")
PAIR = ("Rotating TLS certificates for the ingress controller before they expire, with cert-manager renewals",
        "cert-manager renews the ingress certificates thirty days before expiry and reloads the controller "
        "without dropping connections.")
FILES = 8  # NEAR in every file: 8 chunks, 28 pairs (> GROUP_OVER); PAIR in 3 files: 3 pairs


def _doc(k: int) -> str:
    chunks = [(f"kafka:rebalance-{k}", *NEAR)]
    if k < 3:
        chunks.append((f"tls:rotation-{k}", *PAIR))
    fm = "---\ntitle: t\nchunks:\n" + "".join(f'  - id: {cid}\n    context: "{ctx}"\n' for cid, ctx, _ in chunks)
    return fm + "---\n\n" + "".join(f'<Chunk id="{cid}">\n{body}\n</Chunk>\n\n' for cid, _, body in chunks)


def _workspace(tmp_path: Path) -> Path:
    for k in range(FILES):
        (tmp_path / f"doc-{k}.md").write_text(_doc(k), encoding="utf-8")
    return tmp_path


def _run(capsys, *args) -> tuple[int, str]:
    capsys.readouterr()
    status = main([str(a) for a in args])
    return status, capsys.readouterr().out


def _similar(out: str) -> list[str]:
    return [line for line in out.splitlines() if "[similar-chunks]" in line]


def test_a_pair_of_two_files_is_printed_once_and_a_cluster_is_one_line(tmp_path, capsys) -> None:
    status, out = _run(capsys, "diagnose", _workspace(tmp_path))
    lines = _similar(out)
    pairs = [line for line in lines if "tls:rotation" in line]
    assert len(pairs) == 3  # 3 pairs across 3 files, each in two reports, each printed once
    assert {p.rsplit("(", 1)[1] for p in pairs} == {
        "tls:rotation-0, tls:rotation-1)", "tls:rotation-0, tls:rotation-2)", "tls:rotation-1, tls:rotation-2)"}
    [cluster] = [line for line in lines if "kafka:rebalance" in line]
    assert "28 near-duplicate pairs join these chunks into one cluster" in cluster
    assert f"— 8 chunks in {FILES} files (most paired first: " in cluster
    assert cluster.count("kafka:rebalance-") == 5 and cluster.endswith("… and 3 more)")
    # the total counts each finding once: the cluster's 28 pairs and the 3 pairs, not twice each
    in_reports = json.loads(_run(capsys, "diagnose", "--json", tmp_path)[1])
    sims = sum(1 for r in in_reports for i in r["issues"] if i["rule"] == "similar-chunks")
    assert sims == 2 * (28 + 3)
    others = sum(1 for r in in_reports for i in r["issues"] if i["rule"] != "similar-chunks")
    assert out.splitlines()[-1] == f"{FILES} files diagnosed: {28 + 3 + others} findings"
    assert status == 0


def test_suggest_level_gives_the_cluster_one_suggestion(tmp_path, capsys) -> None:
    out = _run(capsys, "diagnose", "--level", "suggest", _workspace(tmp_path))[1].splitlines()
    k = next(n for n, line in enumerate(out) if "[similar-chunks]" in line and "cluster" in line)
    assert out[k + 1].startswith("    suggestion: They are near-duplicates: where chunks say the same thing")


def test_json_keeps_every_member_of_a_cluster_in_one_document(tmp_path, capsys) -> None:
    """One document of 8 near-duplicate chunks: its report groups the 28 pairs and keeps each."""
    ctx, body = NEAR
    fm = "---\ntitle: t\nchunks:\n" + "".join(f'  - id: kafka:r{k}\n    context: "{ctx}"\n' for k in range(8))
    doc = tmp_path / "one.md"
    doc.write_text(fm + "---\n\n" + "".join(f'<Chunk id="kafka:r{k}">\n{body}\n</Chunk>\n\n' for k in range(8)),
                   encoding="utf-8")
    report = json.loads(_run(capsys, "diagnose", "--json", doc)[1])
    [group] = [i for i in report["issues"] if i["rule"] == "similar-chunks"]
    assert group["count"] == 28 and len(group["members"]) == 28
    assert {tuple(m["chunk_ids"]) for m in group["members"]} == {
        (f"kafka:r{a}", f"kafka:r{b}") for a in range(8) for b in range(a + 1, 8)}
    assert group["chunk_ids"] == [f"kafka:r{k}" for k in range(8)]
    assert [(c["chunk_id"], c["pairs"]) for c in group["chunks"]] == [(f"kafka:r{k}", 7) for k in range(8)]
    assert {c["filepath"] for c in group["chunks"]} == {str(doc)}


def _pair(a: str, b: str, cosine: float, fa: str = "a.md", fb: str = "a.md") -> tuple[str, dict]:
    issue = {"category": "semantic_similarity", "severity": "warning", "chunk_ids": [a, b], "message": f"{a}~{b}",
             "rule": "similar-chunks", "line": 3, "column": 5, "cosine": cosine, "jaccard": 0.5,
             "shared_terms": ["kafka"]}
    if fa != fb:
        issue["files"] = [fa, fb]
    return fa, issue


def test_clusters_are_connected_components_near_duplicates_apart() -> None:
    chain = [_pair(f"c{k}", f"c{k + 1}", 0.6) for k in range(GROUP_OVER + 2)]  # 22 pairs, 23 chunks
    near = [_pair("c0", "n0", 0.95), _pair("n0", "n1", 0.95), _pair("n1", "n2", 0.95)]  # touch the chain at c0
    apart = [_pair("x0", "x1", 0.6), _pair("x1", "x2", 0.6)]  # another component, too small to group
    out = group_findings([chain[0], *near, *apart, *chain[1:]])
    assert [type(x) for x in out] == [Group, tuple, tuple, tuple, tuple, tuple]
    g = out[0]
    assert len(g.members) == GROUP_OVER + 2 and g.pairs
    names, what = g.names()
    assert what == "chunks" and len(names) == GROUP_OVER + 3
    assert names[:2] == ["c1", "c2"] and set(names[-2:]) == {"c0", f"c{GROUP_OVER + 2}"}  # ends: one pair each
    assert "22 similar pairs" in g.message() and "(similarity 60%)" in g.message()


def test_the_other_side_of_a_cross_file_pair_is_dropped_and_counted_once() -> None:
    a_side = _pair("p", "q", 0.7, "a.md", "b.md")
    b_side = ("b.md", dict(a_side[1]))
    assert group_findings([a_side, b_side]) == [a_side]
    many = [_pair(f"p{k}", "hub", 0.7, "a.md", "b.md") for k in range(GROUP_OVER + 1)]
    both = many + [("b.md", dict(i)) for _, i in many]
    [g] = group_findings(both)
    assert len(g.members) == GROUP_OVER + 1 and g.files() == ["b.md", "a.md"]  # hub (in b.md) first
    assert g.names()[0][0] == "b.md hub"
    [obj] = group_report_issues([i for _, i in many], "a.md")
    assert obj["count"] == GROUP_OVER + 1 and obj["chunks"][0] == {"filepath": "b.md", "chunk_id": "hub",
                                                                   "pairs": GROUP_OVER + 1}


ENTITY = "---\ntitle: t\nentities:\n  - id: entity:helm\n    name: Helm\n    type: tool\nchunks:\n"


def test_a_grouped_finding_is_still_fixed_once_per_member(tmp_path, capsys) -> None:
    """25 chunks name Helm in their context without linking it: one grouped line, 25 fixes applied."""
    topics = ["deploys", "rollbacks", "upgrades", "charts", "values", "secrets", "hooks", "tests", "lint", "repos",
              "plugins", "releases", "history", "diffs", "templates", "schemas", "registries", "signing",
              "dependencies", "library charts", "subcharts", "notes", "status", "uninstall", "migrations"]
    fm, body = ENTITY, ""
    for k, topic in enumerate(topics):
        fm += (f"  - id: ops:c{k}\n    context: \"How Helm handles {topic} for the service, one of the "
               f"release tasks the platform team documents here\"\n")
        body += f'<Chunk id="ops:c{k}">\nNotes on {topic}: step {k} of the runbook, written out.\n</Chunk>\n\n'
    doc = tmp_path / "helm.md"
    doc.write_text(fm + "---\n\n" + body, encoding="utf-8")
    out = _run(capsys, "diagnose", "--level", "fix", doc)[1].splitlines()
    [k] = [n for n, line in enumerate(out) if "[entity-missing-link]" in line]
    assert "— 25 chunks (first 5: ops:c0, ops:c1, ops:c2, ops:c3, ops:c4 … and 20 more)" in out[k]
    assert out[k + 2].startswith("    fix: ") and out[k + 2].endswith("(and 24 like it)")
    capsys.readouterr()
    assert main(["diagnose", "--apply", "--dry-run", str(doc)]) == 0
    got, err = capsys.readouterr()
    applied = [line for line in got.splitlines() if line.startswith("applied: ") and "entity:helm" in line]
    assert len(applied) == 25
    assert err.splitlines()[-1].startswith("25 fixes would be applied")
