"""Diagnosis: the conformance suite's expected findings, each category, levels, and inputs that must not crash."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxfst_tui.core.diagnosis.diagnose import diagnose, diagnose_workspace
from ctxfst_tui.core.diagnosis.similarity import COSINE_THRESHOLD, SIMILARITY_THRESHOLD
from ctxfst_tui.core.format.document import Document

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
CONFORMANCE = SHARED / "conformance"
EXPECTED = sorted((CONFORMANCE / "expected").glob("*.json")) if CONFORMANCE.is_dir() else []


def load(tmp_path: Path, text: str | bytes, name: str = "doc.md") -> Document:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return Document.load(p)


def run(tmp_path: Path, text: str | bytes, level: str = "fix") -> dict:
    report = diagnose(load(tmp_path, text), level)
    json.dumps(report)  # always JSON-serialisable
    assert not [i for i in report["issues"] if i["rule"] == "diagnose-internal-error"], report
    return report


def issues(report: dict, rule: str) -> list[dict]:
    return [i for i in report["issues"] if i["rule"] == rule]


def doc(chunks: str, entities: str = "", body: str = "") -> str:
    """A document from YAML snippets; ``chunks``/``entities`` are the list items, indented by 2."""
    fm = "---\ntitle: t\n"
    if entities:
        fm += "entities:\n" + entities
    fm += "chunks:\n" + chunks + "---\n\n" + body
    return fm


GOOD_CONTEXT = "A well sized context that explains what this chunk covers and why someone would look for it"


# ---------------------------------------------------------------- conformance


@pytest.mark.skipif(not EXPECTED, reason="shared conformance suite not present")
@pytest.mark.parametrize("expected", EXPECTED, ids=lambda p: p.stem)
def test_conformance_expected_issues_present(expected: Path) -> None:
    want = json.loads(expected.read_text(encoding="utf-8"))["diagnose_issues"]
    report = diagnose(Document.load(CONFORMANCE / "docs" / f"{expected.stem}.md"), "fix")
    have = [(i["category"], i["severity"], tuple(sorted(i["chunk_ids"]))) for i in report["issues"]]
    for w in want:
        key = (w["category"], w["severity"], tuple(sorted(w["chunk_ids"])))
        assert key in have, f"missing {key}; have {have}"
        have.remove(key)


# ---------------------------------------------------------------- report shape and levels


def test_report_shape_and_stats(tmp_path: Path) -> None:
    text = doc(
        f'  - id: skill:a\n    tags: [X, Y]\n    context: "{GOOD_CONTEXT}"\n'
        f'  - id: skill:b\n    tags: [Z]\n    context: "short one"\n',
        "  - id: entity:a\n    name: A\n",
        '<Chunk id="skill:a">\nAlpha text.\n</Chunk>\n<Chunk id="skill:b">\nBeta.\n</Chunk>\n',
    )
    r = run(tmp_path, text)
    assert set(r) == {"filepath", "stats", "issues"}
    assert r["filepath"] == str(tmp_path / "doc.md")
    s = r["stats"]
    assert s["chunk_count"] == 2 and s["entity_count"] == 1 and s["unique_tags"] == 3
    assert s["categories"] == ["skill"]
    assert s["avg_context_words"] == (len(GOOD_CONTEXT.split()) + 2) / 2
    # one warning (context-short); infos: two small chunks and the unused entity
    # (the one-letter name "A" is not taken as mentioned by "A well sized context")
    assert s["issues_by_severity"] == {"error": 0, "warning": 1, "info": 3}
    assert [i["rule"] for i in r["issues"] if i["severity"] == "info"] == ["chunk-small", "chunk-small", "entity-unused"]
    assert s["chunk_tokens"]["max"] < 10


def test_levels_control_suggestion_and_fix(tmp_path: Path) -> None:
    text = doc('  - id: skill:a\n    context: ""\n', body='<Chunk id="skill:a">\nx\n</Chunk>\n')
    (d,) = issues(run(tmp_path, text, "diagnose"), "context-empty")
    assert "suggestion" not in d and "fix" not in d
    (s,) = issues(run(tmp_path, text, "suggest"), "context-empty")
    assert s["suggestion"] and "fix" not in s
    (f,) = issues(run(tmp_path, text, "fix"), "context-empty")
    # the reference's patch key ("context") is kept inside our operation
    assert f["fix"] == {"op": "set_context", "chunk_id": "skill:a", "context": "[DRAFT] x", "replaces": ""}
    for key in ("category", "severity", "chunk_ids", "message", "rule", "line", "column"):
        assert key in f


def test_unknown_level_is_a_programming_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        diagnose(load(tmp_path, "x\n"), "repair")


def test_workspace_gives_one_report_per_document(tmp_path: Path) -> None:
    a = load(tmp_path, "no frontmatter\n", "a.md")
    b = load(tmp_path, doc(f'  - id: skill:a\n    context: "{GOOD_CONTEXT}"\n'), "b.md")
    reports = diagnose_workspace([a, b], "suggest")
    assert [r["filepath"] for r in reports] == [a.label, b.label]


# ---------------------------------------------------------------- categories


def test_semantic_similarity(tmp_path: Path) -> None:
    ctx = "Deploying the web service to the cluster with charts and rolling updates"
    text = doc(
        f'  - id: ops:one\n    tags: [A]\n    context: "{ctx}"\n'
        f'  - id: ops:two\n    tags: [B]\n    context: "{ctx}"\n',
        body='<Chunk id="ops:one">\nSame words here.\n</Chunk>\n<Chunk id="ops:two">\nSame words here.\n</Chunk>\n',
    )
    (i,) = issues(run(tmp_path, text), "similar-chunks")
    assert i["category"] == "semantic_similarity" and i["severity"] == "warning"
    assert i["chunk_ids"] == ["ops:one", "ops:two"]
    assert i["line"] == 9  # the second chunk's context line
    assert "similarity: 100%" in i["message"]


def test_context_quality_rules_and_lines(tmp_path: Path) -> None:
    long_ctx = " ".join(["word"] * 60)
    text = doc(
        '  - id: ref:empty\n    context: ""\n'          # lines 4-5
        '  - id: ref:missing\n    tags: [A]\n'          # lines 6-7
        '  - id: ref:short\n    context: "too short"\n'  # lines 8-9
        f'  - id: ref:long\n    context: "{long_ctx}"\n'  # lines 10-11
        '  - id: ref:echo\n    context: "Prometheus scrapes every service every fifteen seconds and keeps samples"\n',  # 12-13
        body='<Chunk id="ref:echo">\nPrometheus scrapes every service every fifteen seconds and keeps samples locally.\n</Chunk>\n',
    )
    r = run(tmp_path, text)
    empty = issues(r, "context-empty")
    assert [(i["chunk_ids"], i["severity"], i["line"]) for i in empty] == [
        (["ref:empty"], "error", 5),
        (["ref:missing"], "error", 6),  # no context field: the entry's own line
    ]
    (short,) = issues(r, "context-short")
    assert (short["chunk_ids"], short["severity"], short["line"]) == (["ref:short"], "warning", 9)
    (long_,) = issues(r, "context-long")
    assert (long_["chunk_ids"], long_["severity"], long_["line"]) == (["ref:long"], "info", 11)
    (echo,) = issues(r, "context-echo")
    assert (echo["chunk_ids"], echo["severity"], echo["line"]) == (["ref:echo"], "warning", 13)
    assert all(i["category"] == "context_quality" for i in empty + [short, long_, echo])


def test_tag_overlap(tmp_path: Path) -> None:
    chunks = "".join(
        f'  - id: skill:{n}\n    tags: [{tags}]\n    context: "{GOOD_CONTEXT} {n}"\n'
        for n, tags in [("a", "Web, JS, A"), ("b", "Web, JS, B"), ("c", "Web, JS"), ("d", "Web, JS")]
    )
    r = run(tmp_path, doc(chunks))
    (ubiq,) = issues(r, "tags-ubiquitous")
    assert ubiq["severity"] == "info" and ubiq["chunk_ids"] == ["skill:a", "skill:b", "skill:c", "skill:d"]
    assert "Web, JS" in ubiq["message"]
    (same,) = issues(r, "tags-identical")
    assert same["severity"] == "warning" and same["chunk_ids"] == ["skill:c", "skill:d"]
    assert same["category"] == "tag_overlap" and same["line"] == 14  # skill:d's tags line


def test_id_naming(tmp_path: Path) -> None:
    chunks = "".join(
        f'  - id: "{cid}"\n    context: "{GOOD_CONTEXT}"\n'
        for cid in ["skill:a", "skill:b", "about:me", "Skill_GraphQL Schema"]
    )
    r = run(tmp_path, doc(chunks))
    (fmt,) = issues(r, "id-format")
    assert fmt["category"] == "id_naming" and fmt["severity"] == "warning"
    assert fmt["chunk_ids"] == ["Skill_GraphQL Schema"] and fmt["line"] == 10
    assert "skill:graphql-schema" in fmt["suggestion"]
    (rare,) = issues(r, "id-rare-prefix")
    assert rare["severity"] == "info" and rare["chunk_ids"] == ["about:me"] and rare["line"] == 8


def test_entity_noise_duplication_and_linking(tmp_path: Path) -> None:
    entities = (
        "  - id: entity:js\n    name: JavaScript\n"      # 4-5
        "  - id: entity:js2\n    name: ' javascript'\n"  # 6-7
        "  - id: entity:sys\n    name: System\n"         # 8-9
    )
    many = ", ".join(["entity:js"] * 7)
    chunks = (
        f'  - id: skill:a\n    entities: [{many}]\n    context: "{GOOD_CONTEXT}"\n'           # 11-13
        f'  - id: skill:b\n    entities: [entity:js, entity:nope]\n    context: "{GOOD_CONTEXT} b"\n'  # 14-16
    )
    r = run(tmp_path, doc(chunks, entities))
    (noise,) = issues(r, "entity-generic")
    assert (noise["category"], noise["severity"], noise["chunk_ids"], noise["line"]) == ("entity_noise", "warning", [], 9)
    assert noise["entity_ids"] == ["entity:sys"]
    (dup,) = issues(r, "entity-duplicate-name")
    assert (dup["category"], dup["severity"], dup["line"], dup["chunk_ids"]) == ("entity_duplication", "warning", 7, [])
    assert dup["entity_ids"] == ["entity:js", "entity:js2"] and dup["canonical"] == "entity:js"
    assert dup["fix"] == {"op": "merge_entities", "into": "entity:js", "merged": ["entity:js2"]}
    (many_,) = issues(r, "entity-links-many")
    assert (many_["category"], many_["severity"], many_["chunk_ids"], many_["line"]) == ("entity_linking", "warning", ["skill:a"], 12)
    (undef,) = issues(r, "entity-undefined")
    assert (undef["severity"], undef["chunk_ids"], undef["line"]) == ("error", ["skill:b"], 15)
    assert "entity:nope" in undef["message"]
    assert undef["fix"] == {"op": "unlink_entity", "chunk_id": "skill:b", "entity_id": "entity:nope"}


def test_integer_and_unhashable_entity_refs_are_errors_not_crashes(tmp_path: Path) -> None:
    entities = "  - id: entity:a\n    name: A\n  - id: 42\n    name: Answer\n"
    chunks = (
        f'  - id: skill:a\n    entities: [entity:a, 42]\n    context: "{GOOD_CONTEXT}"\n'
        f'  - id: skill:b\n    entities: [{{x: 1}}, [entity:a]]\n    context: "{GOOD_CONTEXT} b"\n'
    )
    r = run(tmp_path, doc(chunks, entities))
    undef = issues(r, "entity-undefined")  # one per bad reference
    assert [(i["chunk_ids"], i["category"], i["severity"]) for i in undef] == [
        (["skill:a"], "entity_linking", "error"),
        (["skill:b"], "entity_linking", "error"),
        (["skill:b"], "entity_linking", "error"),
    ]
    assert "42 (an integer" in undef[0]["message"] and undef[0]["entity_ids"] == [42]
    assert undef[0]["fix"] == {"op": "unlink_entity", "chunk_id": "skill:a", "entity_id": 42}
    assert [i["fix"]["entity_id"] for i in undef[1:]] == [{"x": 1}, ["entity:a"]]  # the values as written


# ---------------------------------------------------------------- structure and inputs that must not crash


@pytest.mark.parametrize(
    "text, rule, line",
    [
        (b"", "file-empty", 0),
        (b"  \n\n", "file-empty", 0),
        (b"---\x00\x01binary", "file-binary", 1),
        (b"---\ntitle: caf\xe9\n---\n", "file-encoding", 2),
        ("# Just Markdown\n\nNo frontmatter here.\n", "no-valid-chunks", 1),
        ("---\ntitle: t\nentities:\n  - id: a\n     name: b\n---\nbody\n", "yaml-syntax", 5),
        ("---\ntitle: never closed\nchunks: []\n", "frontmatter-unclosed", 1),
        ("---\n- a\n- b\n---\n", "frontmatter-not-mapping", 2),
        ("---\n---\nbody\n", "frontmatter-not-mapping", 2),
        ("---\ntitle: t\n---\nbody\n", "no-valid-chunks", 1),
        ("---\ntitle: t\nchunks:\n  skill:a:\n    context: x\n---\n", "chunks-not-list", 3),
        ("---\ntitle: t\nchunks: null\n---\n", "chunks-not-list", 3),
        ("---\ntitle: t\nchunks: []\n---\n", "no-valid-chunks", 3),
        ("---\ntitle: t\nchunks:\n  - just a string\n  - 7\n---\n", "no-valid-chunks", 3),
    ],
    ids=[
        "empty", "whitespace", "binary", "latin1", "no-frontmatter", "broken-yaml", "unclosed",
        "fm-list", "fm-empty", "no-chunks-key", "chunks-mapping", "chunks-null", "chunks-empty", "chunks-scalars",
    ],
)
def test_structure_errors(tmp_path: Path, text: str | bytes, rule: str, line: int) -> None:
    r = run(tmp_path, text)
    errors = [i for i in r["issues"] if i["category"] == "structure" and i["severity"] == "error"]
    assert [(i["rule"], i["line"], i["chunk_ids"]) for i in errors] == [(rule, line, [])]
    assert r["stats"]["chunk_count"] == 0
    assert r["stats"]["issues_by_severity"]["error"] == 1


def test_broken_yaml_message_names_the_line(tmp_path: Path) -> None:
    r = run(tmp_path, "---\ntitle: t\nentities:\n  - id: a\n     name: b\n---\nbody\n")
    (i,) = r["issues"]
    assert "YAML line 5" in i["message"] and "No YAML frontmatter" not in i["message"]


def test_odd_chunk_entries_are_skipped_with_a_warning(tmp_path: Path) -> None:
    text = doc(
        "  - just a string\n"                                  # 10 (entities take lines 3-8)
        "  - context: no id here\n"                            # 11
        f'  - id: 17\n    context: "{GOOD_CONTEXT}"\n'          # 12-13
        "  - id: skill:b\n    tags: Solo\n    context: 12\n"   # 14-16
        "  - id: skill:c\n    tags: null\n    context: [a, b]\n    entities: entity:x\n",
        "  - not a mapping\n  - id: entity:n\n    name: 5\n  - id: entity:m\n    name: null\n",
    )
    r = run(tmp_path, text)
    skipped = issues(r, "chunk-skipped")
    assert [(i["line"], i["severity"]) for i in skipped] == [(10, "warning"), (11, "warning")]
    assert "is a string, not a mapping; skipped" in skipped[0]["message"]
    assert "has no (or an empty) id; skipped" in skipped[1]["message"]
    assert r["stats"]["chunk_count"] == 3
    assert "17" in [cid for i in issues(r, "id-format") for cid in i["chunk_ids"]]
    # "Solo" is one tag, not four letters
    assert r["stats"]["unique_tags"] == 1
    # a numeric context has words; a list context counts as empty
    assert [i["chunk_ids"] for i in issues(r, "context-short")] == [["skill:b"]]
    assert [i["chunk_ids"] for i in issues(r, "context-empty")] == [["skill:c"]]


def test_entity_checks_still_run_without_usable_chunks(tmp_path: Path) -> None:
    r = run(tmp_path, "---\nentities:\n  - id: entity:t\n    name: Tool\nchunks: []\n---\n")
    assert [i["rule"] for i in r["issues"]] == ["no-valid-chunks", "entity-generic", "entity-unused"]
    assert r["issues"][0]["cause"] == "no-chunks"
    assert r["stats"]["entity_count"] == 1


def test_bom_and_crlf(tmp_path: Path) -> None:
    text = doc('  - id: skill:a\n    context: ""\n', body='<Chunk id="skill:a">\nx\n</Chunk>\n')
    raw = ("\ufeff" + text).replace("\n", "\r\n").encode("utf-8")
    r = run(tmp_path, raw)
    (i,) = issues(r, "context-empty")
    assert i["line"] == 5


# ---------------------------------------------------------------- helpers for the rules below


def folder(tmp_path: Path, files: dict[str, str]) -> list[Document]:
    """Documents written to ``tmp_path`` in name order (a folder diagnosed as one workspace)."""
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return [Document.load(tmp_path / name) for name in sorted(files)]


def run_ws(docs: list[Document], level: str = "fix") -> list[dict]:
    reports = diagnose_workspace(docs, level)
    json.dumps(reports)
    for r in reports:
        assert not [i for i in r["issues"] if i["rule"] == "diagnose-internal-error"], r
    return reports


def chunked(chunks: list[tuple[str, str, str]], entities: str = "", extra: dict[str, str] | None = None) -> str:
    """A document from (id, context, body) triples; ``extra`` adds YAML lines (indented by 4) to a chunk."""
    fm = "---\ntitle: t\n"
    if entities:
        fm += "entities:\n" + entities
    fm += "chunks:\n"
    body = ""
    for cid, ctx, content in chunks:
        fm += f'  - id: {cid}\n    context: "{ctx}"\n' + (extra or {}).get(cid, "")
        body += f'<Chunk id="{cid}">\n{content}\n</Chunk>\n\n'
    return fm + "---\n\n" + body


def line_of(text: str, needle: str, nth: int = 1) -> int:
    lines = [n for n, line in enumerate(text.splitlines(), 1) if needle in line]
    return lines[nth - 1]


# ---------------------------------------------------------------- semantic similarity (TF-IDF)


PARAPHRASE = [
    ("ops:deploy", "Deploying the web service to the Kubernetes cluster with Helm charts and rolling updates",
     "We ship the web service to Kubernetes using a Helm chart. The rollout is a rolling update that waits "
     "for readiness probes before it continues."),
    ("ops:release", "How new versions of the web service reach Kubernetes: Helm chart upgrades performed as rolling deployments",
     "Each release of the service goes out to the Kubernetes cluster through its Helm chart; the upgrade rolls "
     "pods one at a time and waits until the readiness probes pass."),
    ("ops:backups", "Nightly PostgreSQL backups to object storage and how to restore a single table from them",
     "A cron job runs pg_dump every night and uploads the archive to the bucket. Restores use pg_restore with the table option."),
]


def test_tfidf_finds_the_paraphrase_that_word_jaccard_misses(tmp_path: Path) -> None:
    r = run(tmp_path, chunked(PARAPHRASE))
    (sim,) = issues(r, "similar-chunks")  # the backups chunk is like neither
    assert sim["chunk_ids"] == ["ops:deploy", "ops:release"]
    assert sim["jaccard"] < SIMILARITY_THRESHOLD <= 0.6  # the reference's measure misses it ...
    assert sim["cosine"] >= COSINE_THRESHOLD  # ... TF-IDF over stems does not
    assert {"helm", "kubernetes", "chart"} <= set(sim["shared_terms"])
    assert "Shared distinctive terms: " in sim["message"] and "the" not in sim["shared_terms"]
    assert sim["line"] == line_of(chunked(PARAPHRASE), "How new versions")  # the second chunk's context


def test_unrelated_chunks_are_not_similar(tmp_path: Path) -> None:
    r = run(tmp_path, chunked([PARAPHRASE[0], PARAPHRASE[2]]))
    assert issues(r, "similar-chunks") == []


def test_cross_document_similar_chunks_are_in_both_reports(tmp_path: Path) -> None:
    docs = folder(tmp_path, {
        "a.md": chunked([PARAPHRASE[0], PARAPHRASE[2]]),
        "b.md": chunked([PARAPHRASE[1]]),
    })
    ra, rb = run_ws(docs)
    (sa,), (sb,) = issues(ra, "similar-chunks"), issues(rb, "similar-chunks")
    assert sa["chunk_ids"] == sb["chunk_ids"] == ["ops:deploy", "ops:release"]
    assert sa["files"] == sb["files"] == [docs[0].label, docs[1].label]
    # each report points at its own chunk
    assert sa["line"] == line_of(docs[0].text, "Deploying the web")
    assert sb["line"] == line_of(docs[1].text, "How new versions")
    # diagnosed alone, neither document knows about the other
    assert issues(run(tmp_path, docs[0].text, "fix"), "similar-chunks") == []


# ---------------------------------------------------------------- chunk size


def test_chunk_size_small_and_large(tmp_path: Path) -> None:
    medium = " ".join(f"Paragraph sentence {i} describes how the scheduler places a pod on a node." for i in range(30))
    large = "\n\n".join(
        f"### Part {p}\n\n" + " ".join(f"Step {p}.{i} explains one more detail of the storage migration plan." for i in range(40))
        for p in range(6)
    )
    text = chunked([
        ("ops:tiny", GOOD_CONTEXT + " tiny", "Just a line."),
        ("ops:medium", GOOD_CONTEXT + " medium", medium),
        ("ops:huge", GOOD_CONTEXT + " huge", "## Migration\n\n" + large),
    ])
    r = run(tmp_path, text)
    (small,) = issues(r, "chunk-small")
    assert (small["category"], small["severity"], small["chunk_ids"]) == ("chunk_size", "info", ["ops:tiny"])
    assert small["line"] == line_of(text, '<Chunk id="ops:tiny">') and small["column"] == 1
    assert small["tokens"] < 100 and small["merge_with"] == "ops:medium"
    assert "Merge it with the next chunk 'ops:medium'" in small["suggestion"]
    (big,) = issues(r, "chunk-large")
    assert (big["category"], big["severity"], big["chunk_ids"]) == ("chunk_size", "warning", ["ops:huge"])
    assert big["tokens"] > 1500 and big["line"] == line_of(text, '<Chunk id="ops:huge">')
    assert "Split it into about" in big["suggestion"] and "'Part 0'" in big["suggestion"]
    assert 300 <= r["stats"]["chunk_tokens"]["median"] <= 800  # the medium chunk is in the target range


# ---------------------------------------------------------------- entity duplication


ENTITY = "  - id: {id}\n    name: {name}\n    type: {type}\n"


def ents(*rows: tuple[str, str, str], aliases: dict[str, str] | None = None) -> str:
    out = ""
    for eid, name, etype in rows:
        out += ENTITY.format(id=eid, name=name, type=etype)
        if aliases and eid in aliases:
            out += f"    aliases: [{aliases[eid]}]\n"
    return out


@pytest.mark.parametrize(
    "rows, aliases, canonical, merged, tier, reason",
    [
        ([("entity:nextjs", "Next.js", "framework"), ("entity:next-js", "NextJS", "framework")], None,
         "entity:next-js", ["entity:nextjs"], "sure", "differ only in case, punctuation or spacing"),  # a tie: by id
        ([("entity:kafka", "Kafka", "platform"), ("entity:apache-kafka", "Apache Kafka", "platform")],
         {"entity:kafka": "Apache Kafka"}, "entity:apache-kafka", ["entity:kafka"], "sure", "declares the alias 'Apache Kafka'"),
        ([("entity:k8s", "K8s", "platform"), ("entity:kubernetes", "Kubernetes", "platform")], None,
         "entity:kubernetes", ["entity:k8s"], "sure", "Kubernetes"),
        ([("entity:js", "JS", "skill"), ("entity:javascript", "JavaScript", "skill")], None,
         "entity:javascript", ["entity:js"], "sure", "JavaScript"),
        ([("entity:kubernetes", "Kubernetes", "platform"), ("entity:kubernets", "Kubernets", "platform")], None,
         "entity:kubernetes", ["entity:kubernets"], "review", "spelled almost alike"),
    ],
    ids=["fingerprint", "alias-is-name", "numeronym", "acronym", "typo-review"],
)
def test_entity_duplicate_clusters(tmp_path: Path, rows, aliases, canonical, merged, tier, reason) -> None:
    text = doc(f'  - id: skill:a\n    context: "{GOOD_CONTEXT}"\n', ents(*rows, aliases=aliases))
    r = run(tmp_path, text)
    (dup,) = [i for i in r["issues"] if i["category"] == "entity_duplication"]
    assert dup["rule"] == ("entity-duplicate" if tier == "sure" else "entity-possible-duplicate")
    assert (dup["severity"], dup["chunk_ids"], dup["tier"]) == ("warning" if tier == "sure" else "info", [], tier)
    assert dup["canonical"] == canonical and f"canonical candidate: {canonical}" in dup["message"]
    assert dup["fix"] == {"op": "merge_entities", "into": canonical, "merged": merged}
    assert any(reason in x for x in dup["reasons"]) and reason in dup["suggestion"]
    assert sorted(dup["entity_ids"]) == sorted([canonical, *merged])
    # the finding sits on the name of the entity to merge away
    assert dup["line"] == line_of(text, f"id: {merged[0]}") + 1


@pytest.mark.parametrize(
    "rows",
    [
        [("entity:java", "Java", "skill"), ("entity:javascript", "JavaScript", "skill")],
        [("entity:go", "Go", "skill"), ("entity:google", "Google", "product")],
        [("entity:react", "React", "framework"), ("entity:react-native", "React Native", "framework")],
        [("entity:c", "C", "skill"), ("entity:cpp", "C++", "skill"), ("entity:csharp", "C#", "skill")],
    ],
    ids=["java-javascript", "go-google", "react-native", "c-family"],
)
def test_false_friends_are_never_duplicates(tmp_path: Path, rows) -> None:
    r = run(tmp_path, doc(f'  - id: skill:a\n    context: "{GOOD_CONTEXT}"\n', ents(*rows)))
    assert [i for i in r["issues"] if i["category"] == "entity_duplication"] == []


def test_cross_document_entity_duplicate_in_a_folder(tmp_path: Path) -> None:
    a = chunked([("web:ssr", GOOD_CONTEXT, "Server rendering with Next.js.")],
                ents(("entity:nextjs", "Next.js", "framework")), {"web:ssr": "    entities: [entity:nextjs]\n"})
    b = chunked([("web:routing", GOOD_CONTEXT + " routing", "Routing in NextJS apps.")],
                ents(("entity:next-js", "NextJS", "framework")), {"web:routing": "    entities: [entity:next-js]\n"})
    docs = folder(tmp_path, {"a.md": a, "b.md": b})
    ra, rb = run_ws(docs)
    (da,), (db,) = issues(ra, "entity-duplicate"), issues(rb, "entity-duplicate")
    assert da["fix"] == db["fix"] == {"op": "merge_entities", "into": "entity:next-js", "merged": ["entity:nextjs"]}
    assert "also declared in" in da["message"] and docs[1].label in da["message"] and docs[0].label in db["message"]
    assert da["line"] == line_of(a, "name: Next.js") and db["line"] == line_of(b, "name: NextJS")
    # each document alone has no duplicate
    assert [issues(run_ws([d])[0], "entity-duplicate") for d in docs] == [[], []]


def test_entity_declared_differently_across_documents(tmp_path: Path) -> None:
    a = chunked([("x:a", GOOD_CONTEXT, "Docker everywhere.")], ents(("entity:docker", "Docker", "tool")),
                {"x:a": "    entities: [entity:docker]\n"})
    b = chunked([("x:b", GOOD_CONTEXT + " b", "Docker again.")], ents(("entity:docker", "Docker", "skill")),
                {"x:b": "    entities: [entity:docker]\n"})
    ra, rb = run_ws(folder(tmp_path, {"a.md": a, "b.md": b}))
    assert issues(ra, "entity-inconsistent") == []
    (inc,) = issues(rb, "entity-inconsistent")
    assert inc["severity"] == "warning" and inc["line"] == line_of(b, "type: skill")
    assert inc["fix"] == {"op": "update_entity", "entity_id": "entity:docker", "type": "tool"}


# ---------------------------------------------------------------- entity linking


LINK_ENTITIES = ents(
    ("entity:go", "Go", "skill"), ("entity:kubernetes", "Kubernetes", "platform"),
    ("entity:react", "React", "framework"), ("entity:react-native", "React Native", "framework"),
    ("entity:postgresql", "PostgreSQL", "database"), ("entity:gke", "Google Kubernetes Engine", "platform"),
    aliases={"entity:postgresql": "postgres, pg"},
)


def test_missing_links_are_word_bounded_and_case_aware(tmp_path: Path) -> None:
    text = chunked(
        [
            ("x:google", "Notes on Google search ranking and the going rate of golang-free tooling here",
             "We use Google Docs. Let's go! Going, gone, cargo, ago, GoLand."),
            ("x:go", "Writing services in Go for the platform team with small binaries and fast builds",
             "The services are written in Go and deployed on kubernetes clusters."),
            ("x:mobile", GOOD_CONTEXT + " mobile", "The app is built with React Native for both platforms."),
        ],
        LINK_ENTITIES,
        {"x:google": "    entities: []\n", "x:go": "    entities: []\n", "x:mobile": "    entities: []\n"},
    )
    r = run(tmp_path, text)
    found = {(i["chunk_ids"][0], i["entity_ids"][0]): i
             for i in issues(r, "entity-missing-link") + issues(r, "entity-unlinked-mention")}
    assert ("x:google", "entity:go") not in found  # "Go" in "Google", "go", "golang", "GoLand": none is a mention
    assert ("x:google", "entity:gke") not in found
    go = found[("x:go", "entity:go")]
    assert go["severity"] == "warning" and "in its context" in go["message"]  # named in the context: strong
    assert go["fix"] == {"op": "link_entity", "chunk_id": "x:go", "entity_id": "entity:go"}
    assert go["line"] == line_of(text, "entities: []", 2)
    k8s = found[("x:go", "entity:kubernetes")]  # "kubernetes" in lower case: names of 3+ letters ignore case
    assert (k8s["rule"], k8s["severity"]) == ("entity-unlinked-mention", "info")  # once, in the content: weak
    assert k8s["mention"]["text"] == "kubernetes"
    assert (k8s["mention"]["line"], k8s["mention"]["column"]) == (
        line_of(text, "deployed on kubernetes"), text.splitlines()[line_of(text, "deployed on kubernetes") - 1].index("kubernetes") + 1)
    # "React Native" is a mention of React Native only, not of React
    assert ("x:mobile", "entity:react-native") in found and ("x:mobile", "entity:react") not in found


def test_weak_links(tmp_path: Path) -> None:
    text = chunked(
        [("db:ops", "Running the primary database with streaming replicas and nightly dumps",
          "We keep postgres on dedicated hosts. React is not involved.")],
        LINK_ENTITIES,
        {"db:ops": "    entities: [entity:postgresql, entity:go, entity:react]\n"},
    )
    r = run(tmp_path, text)
    weak = issues(r, "entity-weak-link")
    assert [i["entity_ids"] for i in weak] == [["entity:go"]]  # postgres is an alias, React is named
    assert weak[0]["severity"] == "info" and weak[0]["line"] == line_of(text, "entities: [entity:postgresql")
    # its fix would unlink the only link of entity:go, leaving it unused (info): a fix may not
    # create a finding as bad as its own, so it is withheld and says why
    assert "fix" not in weak[0]
    assert weak[0]["fix_withheld"].startswith(
        "'unlink entity:go from db:ops' would create info [entity-unused] Entity 'entity:go'")


def test_a_weak_link_is_unlinked_when_another_chunk_still_links_the_entity(tmp_path: Path) -> None:
    text = chunked(
        [("db:ops", "Running the primary database with streaming replicas and nightly dumps",
          "We keep postgres on dedicated hosts. React is not involved."),
         ("svc:api", "The API service is written in Go and talks to the primary database",
          "The Go service reads from postgres.")],
        LINK_ENTITIES,
        {"db:ops": "    entities: [entity:postgresql, entity:go, entity:react]\n",
         "svc:api": "    entities: [entity:go, entity:postgresql]\n"},
    )
    weak = issues(run(tmp_path, text), "entity-weak-link")
    assert [(i["chunk_ids"], i["entity_ids"]) for i in weak] == [(["db:ops"], ["entity:go"])]
    assert weak[0]["fix"] == {"op": "unlink_entity", "chunk_id": "db:ops", "entity_id": "entity:go"}


def test_undefined_references_get_the_most_useful_fix(tmp_path: Path) -> None:
    other = chunked([("db:pool", GOOD_CONTEXT, "Pooling.")], ents(("entity:pgpool", "Pgpool-II", "tool")),
                    {"db:pool": "    entities: [entity:pgpool]\n"})
    text = chunked(
        [("db:storage", "Primary storage on PostgreSQL with connection pooling in front of it for the web tier",
          "Everything lives in PostgreSQL 16. PgBouncer sits in front in transaction mode.")],
        LINK_ENTITIES,
        {"db:storage": "    entities: [entity:postgresql, entity:pgbouncer, entity:postgresq, entity:pgpool, entity:nowhere, 42]\n"},
    )
    docs = folder(tmp_path, {"a.md": text, "b.md": other})
    r = run_ws(docs)[0]
    fixes = {str(i["entity_ids"][0]): i["fix"] for i in issues(r, "entity-undefined")}
    assert all(i["severity"] == "error" and i["chunk_ids"] == ["db:storage"] for i in issues(r, "entity-undefined"))
    assert fixes["entity:pgbouncer"] == {"op": "declare_entity", "chunk_id": "db:storage",
                                         "entity": {"id": "entity:pgbouncer", "name": "PgBouncer", "type": "concept"}}
    assert fixes["entity:postgresq"] == {"op": "relink_entity", "chunk_id": "db:storage",
                                         "entity_id": "entity:postgresq", "into": "entity:postgresql"}
    assert fixes["entity:pgpool"] == {"op": "declare_entity", "chunk_id": "db:storage",
                                      "entity": {"id": "entity:pgpool", "name": "Pgpool-II", "type": "tool"}}
    assert fixes["entity:nowhere"] == {"op": "unlink_entity", "chunk_id": "db:storage", "entity_id": "entity:nowhere"}
    assert fixes["42"] == {"op": "unlink_entity", "chunk_id": "db:storage", "entity_id": 42}


def test_unused_entities_and_alias_candidates(tmp_path: Path) -> None:
    text = chunked(
        [("x:build", "Building the Go binaries in CI and pushing images for Google Kubernetes Engine (GKE) clusters",
          "Go binaries ship to GKE.")],
        LINK_ENTITIES,
        {"x:build": "    entities: [entity:go]\n"},
    )
    r = run(tmp_path, text)
    unused = {i["entity_ids"][0]: i for i in issues(r, "entity-unused")}
    assert set(unused) == {"entity:kubernetes", "entity:react", "entity:react-native", "entity:postgresql", "entity:gke"}
    assert unused["entity:react"]["fix"] == {"op": "delete_entity", "entity_id": "entity:react"}
    assert unused["entity:react"]["line"] == line_of(text, "id: entity:react")
    assert "fix" not in unused["entity:gke"] and "x:build" in unused["entity:gke"]["suggestion"]  # named: link it instead
    (alias,) = issues(r, "entity-alias-candidate")
    assert alias["fix"] == {"op": "add_alias", "entity_id": "entity:gke", "alias": "GKE"}
    assert alias["line"] == line_of(text, "id: entity:gke")  # no aliases field: the entry


def test_links_are_checked_workspace_wide(tmp_path: Path) -> None:
    """An entity linked from another document of the workspace is used."""
    a = chunked([("x:a", GOOD_CONTEXT, "Redis.")], ents(("entity:redis", "Redis", "database")))
    b = chunked([("x:b", GOOD_CONTEXT + " b", "Redis again.")], ents(("entity:redis", "Redis", "database")),
                {"x:b": "    entities: [entity:redis]\n"})
    ra, rb = run_ws(folder(tmp_path, {"a.md": a, "b.md": b}))
    assert issues(ra, "entity-unused") == [] and issues(rb, "entity-unused") == []
    assert [i["chunk_ids"] for i in issues(ra, "entity-unlinked-mention")] == [["x:a"]]


# ---------------------------------------------------------------- dependencies


def test_dependency_unknown_external_and_cycles(tmp_path: Path) -> None:
    a = chunked(
        [("s:one", GOOD_CONTEXT + " one", "One."), ("s:two", GOOD_CONTEXT + " two", "Two."),
         ("s:three", GOOD_CONTEXT + " three", "Three."), ("s:self", GOOD_CONTEXT + " self", "Self.")],
        extra={
            "s:one": "    dependencies: [s:three]\n",
            "s:two": "    dependencies: [s:one, s:nope, x:other]\n",
            "s:three": "    dependencies: [s:two]\n",
            "s:self": "    dependencies: [s:self]\n",
        },
    )
    b = chunked([("x:other", GOOD_CONTEXT + " other", "Other.")])
    ra, _ = run_ws(folder(tmp_path, {"a.md": a, "b.md": b}))
    (unknown,) = issues(ra, "dependency-unknown")
    assert (unknown["category"], unknown["severity"], unknown["chunk_ids"]) == ("dependencies", "warning", ["s:two"])
    assert unknown["fix"] == {"op": "remove_dependency", "chunk_id": "s:two", "dependency": "s:nope"}
    assert unknown["line"] == line_of(a, "dependencies: [s:one")
    (external,) = issues(ra, "dependency-external")
    assert external["severity"] == "info" and external["dependency"] == "x:other"
    cycles = issues(ra, "dependency-cycle")
    assert [c["chunk_ids"] for c in cycles] == [["s:one", "s:three", "s:two"], ["s:self"]]
    loop, self_loop = cycles
    assert loop["cycle"] == ["s:one", "s:three", "s:two", "s:one"]
    # the forward edge (s:one -> s:three) is the one to remove
    assert loop["fix"] == {"op": "remove_dependency", "chunk_id": "s:one", "dependency": "s:three"}
    assert loop["line"] == line_of(a, "dependencies: [s:three]")
    assert self_loop["fix"] == {"op": "remove_dependency", "chunk_id": "s:self", "dependency": "s:self"}
    assert "depends on itself" in self_loop["message"]


# ---------------------------------------------------------------- context drafts and placeholders


def test_empty_context_fix_is_a_clearly_marked_draft(tmp_path: Path) -> None:
    text = chunked(
        [("x:a", "", "## Rolling back\n\nWhen a release misbehaves we roll back to the previous revision. Then we watch."),
         ("x:b", "[TODO: Describe the purpose and unique aspects of x:b]", "Body."),
         ("x:gone", "", "")],
    ).replace('<Chunk id="x:gone">\n\n</Chunk>\n', "")
    r = run(tmp_path, text)
    empty = {i["chunk_ids"][0]: i["fix"] for i in issues(r, "context-empty")}
    assert empty["x:a"]["context"] == "[DRAFT] Rolling back: When a release misbehaves we roll back to the previous revision."
    assert empty["x:gone"]["context"] == "[TODO: Describe the purpose and unique aspects of x:gone]"
    assert [i["chunk_ids"] for i in issues(r, "context-placeholder")] == [["x:b"]]


# ---------------------------------------------------------------- every finding is positioned and typed


def test_every_finding_has_rule_ids_position_and_dict_fix(tmp_path: Path) -> None:
    from ctxfst_tui.core.workspace.fixes import FIX_OPS

    docs = folder(tmp_path, {"a.md": chunked(PARAPHRASE, LINK_ENTITIES), "b.md": (CONFORMANCE / "docs" / "diag-tags-entities.md").read_text()
                             if CONFORMANCE.is_dir() else chunked([PARAPHRASE[1]])})
    for r in run_ws(docs):
        for i in r["issues"]:
            assert i["rule"] and i["severity"] in ("error", "warning", "info")
            assert isinstance(i["chunk_ids"], list) and i["line"] >= 1 and i["column"] >= 1
            if "fix" in i:
                assert isinstance(i["fix"], dict) and i["fix"]["op"] in FIX_OPS, i


def test_hostile_folder_is_diagnosed_as_one_workspace(hostile_dir: Path) -> None:
    docs = [Document.load(p) for p in sorted(hostile_dir.iterdir())]
    reports = run_ws(docs)
    assert len(reports) == len(docs)
    assert all(any(i["category"] == "structure" for i in r["issues"]) for r in reports)


def test_diagnose_is_a_workspace_of_one(tmp_path: Path) -> None:
    d = load(tmp_path, chunked(PARAPHRASE, LINK_ENTITIES))
    assert diagnose(d, "suggest") == diagnose_workspace([d], "suggest")[0]
