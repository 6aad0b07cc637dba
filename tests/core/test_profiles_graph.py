"""Entity profiles and entity graph: conformance with the reference outputs, plus unit cases."""

from __future__ import annotations

import json
import math
from pathlib import Path

import networkx as nx
import pytest

from ctxfst_tui.core.entities import graph as graph_module
from ctxfst_tui.core.entities import profiles as profiles_module
from ctxfst_tui.core.entities.graph import (
    DEFAULT_MIN_SCORE,
    DEFAULT_TOP_K,
    GraphInputError,
    build_entity_graph,
    to_networkx,
    write_graphml,
)
from ctxfst_tui.core.entities.profiles import ProfileInputError, build_entity_profiles

SHARED_DIR = Path(__file__).resolve().parents[2].parent / "shared"
EXPECTED_DIR = SHARED_DIR / "conformance" / "expected"
FLOAT_TOLERANCE = 1e-4


def _cases_with_profiles() -> list[Path]:
    """Expected files that carry reference profiles (others lack a valid export)."""
    if not EXPECTED_DIR.is_dir():
        return []
    return [
        path
        for path in sorted(EXPECTED_DIR.glob("*.json"))
        if "profiles" in json.loads(path.read_text(encoding="utf-8"))
    ]


def assert_same(actual, expected, where: str = "$") -> None:
    """Deep equality with a float tolerance; dict key sets must match exactly."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        assert actual == expected and type(actual) is type(expected), f"{where}: {actual!r} != {expected!r}"
    elif isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        assert math.isclose(actual, expected, rel_tol=0.0, abs_tol=FLOAT_TOLERANCE), (
            f"{where}: {actual!r} != {expected!r}"
        )
    elif isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
        assert set(actual) == set(expected), (
            f"{where}: keys differ, extra {sorted(set(actual) - set(expected))}, "
            f"missing {sorted(set(expected) - set(actual))}"
        )
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list), f"{where}: expected a list, got {actual!r}"
        assert len(actual) == len(expected), f"{where}: length {len(actual)} != {len(expected)}"
        for index, (got, want) in enumerate(zip(actual, expected)):
            assert_same(got, want, f"{where}[{index}]")
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def _without_input(document: dict) -> dict:
    """Copy minus meta.input, which holds a path that differs per machine."""
    document = json.loads(json.dumps(document))
    document.get("meta", {}).pop("input", None)
    return document


@pytest.fixture(params=_cases_with_profiles() or [None], ids=lambda p: p.stem if p else "no-shared")
def expected_case(request) -> dict:
    if request.param is None:
        pytest.skip(f"no conformance files under {EXPECTED_DIR}")
    return json.loads(request.param.read_text(encoding="utf-8"))


def test_profiles_match_reference(expected_case):
    profiles = build_entity_profiles(expected_case["export"], "chunks.json")
    assert_same(_without_input(profiles), _without_input(expected_case["profiles"]))


def test_graph_from_export_matches_reference(expected_case):
    graph = build_entity_graph(expected_case["export"], "chunks.json")
    assert_same(_without_input(graph), _without_input(expected_case["graph_from_export"]))


def test_graph_from_profiles_matches_reference(expected_case):
    graph = build_entity_graph(expected_case["profiles"], "entity-profiles.json")
    assert_same(_without_input(graph), _without_input(expected_case["graph_from_profiles"]))


def test_text_is_laid_out_as_the_reference_writes_it(expected_case):
    """json.dump(..., indent=2, ensure_ascii=False): two-space indent, UTF-8 unescaped, no final newline."""
    profiles = build_entity_profiles(expected_case["export"], "chunks.json")
    graph = build_entity_graph(expected_case["export"], "chunks.json")
    for text, obj in ((profiles_module.dumps(profiles), profiles), (graph_module.dumps(graph), graph)):
        assert text == json.dumps(obj, indent=2, ensure_ascii=False)
        assert not text.endswith("\n") and text.startswith('{\n  "meta": {\n    "input": "chunks.json",')
        assert json.loads(text) == obj


def test_non_ascii_is_written_unescaped():
    export = {"entities": [{"id": "entity:são-paulo", "name": "São Paulo 圣保罗", "type": "place"}], "chunks": []}
    assert '"name": "São Paulo 圣保罗"' in profiles_module.dumps(build_entity_profiles(export, "é.json"))
    assert '"name": "São Paulo 圣保罗"' in graph_module.dumps(build_entity_graph(export, "é.json"))


def test_key_order_follows_reference(expected_case):
    profiles = build_entity_profiles(expected_case["export"], "chunks.json")
    graph = build_entity_graph(expected_case["export"], "chunks.json")
    assert list(_without_input(profiles)["meta"]) == list(_without_input(expected_case["profiles"])["meta"])
    assert list(_without_input(graph)["meta"]) == list(_without_input(expected_case["graph_from_export"])["meta"])
    for got, want in zip(profiles["entities"], expected_case["profiles"]["entities"]):
        assert list(got) == list(want)
    for got, want in zip(graph["nodes"], expected_case["graph_from_export"]["nodes"]):
        assert list(got) == list(want)


# ---------------------------------------------------------------- hand-made data

TOY_EXPORT = {
    "entities": [
        {"id": "entity:python", "name": "Python", "type": "skill", "aliases": ["py"]},
        {"id": "entity:fastapi", "name": "FastAPI", "type": "framework", "aliases": []},
        {"id": "entity:pandas", "name": "Pandas", "type": "framework", "aliases": []},
        {"id": "entity:gardening", "name": "Gardening", "type": "hobby", "aliases": []},
    ],
    "chunks": [
        {
            "id": "chunk:api",
            "context": "Python web APIs built with FastAPI",
            "content": "I build REST APIs in Python using FastAPI and async handlers.",
            "tags": ["Python", "API"],
            "entities": ["entity:python", "entity:fastapi"],
        },
        {
            "id": "chunk:data",
            "context": "Python data pipelines with Pandas",
            "content": "Pandas dataframes power my Python data pipelines.",
            "tags": ["Python", "Data"],
            "entities": ["entity:python", "entity:pandas", "entity:ghost"],
        },
        {
            "id": "chunk:garden",
            "context": "Weekend gardening notes",
            "content": "Tomatoes and basil grow well in raised beds.",
            "tags": ["Hobby"],
            "entities": ["entity:gardening"],
        },
    ],
}

WORLD_MODEL_PROFILES = {
    "meta": {"dangling_chunk_entity_refs": []},
    "entities": [
        {"id": "entity:has-raw-resume", "name": "Has raw resume", "type": "state"},
        {
            "id": "entity:parse-resume",
            "name": "Parse resume",
            "type": "action",
            "preconditions": ["entity:has-raw-resume"],
            "postconditions": ["entity:has-parsed-resume"],
        },
        {
            "id": "entity:score-resume",
            "name": "Score resume",
            "type": "action",
            "preconditions": ["entity:has-parsed-resume", "NOT entity:scored"],
            "postconditions": ["entity:scored"],
        },
        {
            "id": "entity:rescore",
            "name": "Rescore",
            "type": "action",
            "preconditions": ["NOT entity:scored"],
        },
    ],
}


def test_profiles_reverse_links_and_representation():
    profiles = build_entity_profiles(TOY_EXPORT, "toy.json")
    by_id = {profile["id"]: profile for profile in profiles["entities"]}

    assert [p["id"] for p in profiles["entities"]] == sorted(by_id)
    assert by_id["entity:python"]["mentioned_chunks"] == ["chunk:api", "chunk:data"]
    assert by_id["entity:python"]["mention_count"] == 2
    assert by_id["entity:fastapi"]["mentioned_chunks"] == ["chunk:api"]
    assert by_id["entity:gardening"]["mentioned_chunks"] == ["chunk:garden"]
    assert by_id["entity:python"]["related_entities"] == ["FastAPI", "Pandas"]
    assert by_id["entity:python"]["tags"] == ["API", "Data", "Python"]
    # The entity's own name and aliases never become its keywords.
    assert "python" not in by_id["entity:python"]["keywords"]
    assert "py" not in by_id["entity:python"]["keywords"]
    representation = by_id["entity:python"]["representation"].splitlines()
    assert representation[:2] == ["name: Python", "type: skill"]
    assert "aliases py" in representation
    assert representation[-1] == "related FastAPI Pandas"
    assert profiles["meta"]["input"] == "toy.json"
    assert profiles["meta"]["dangling_chunk_entity_refs"] == ["entity:ghost"]


def test_profiles_cap_contexts_and_keywords():
    profiles = build_entity_profiles(TOY_EXPORT, "toy.json", max_contexts=1, top_keywords=2)
    python = next(p for p in profiles["entities"] if p["id"] == "entity:python")
    assert python["contexts"] == ["Python web APIs built with FastAPI"]
    assert len(python["content_excerpts"]) == 2
    assert len(python["keywords"]) == 2


@pytest.mark.parametrize(
    "bad_export, message",
    [
        ([], "root must be a JSON object"),
        ({"entities": [], "chunks": {}}, "list fields"),
        ({"entities": ["entity:x"], "chunks": []}, "entities[0] is not an object"),
    ],
)
def test_profiles_reject_malformed_export(bad_export, message):
    with pytest.raises(ProfileInputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        build_entity_profiles(bad_export, "bad.json")


def test_graph_infers_requires_and_leads_to():
    graph = build_entity_graph(WORLD_MODEL_PROFILES, "wm.json", min_score=1.0)
    operational = [
        (e["source"], e["relation"], e["target"], e["properties"]["inferred_via"])
        for e in graph["edges"]
        if e["relation"] != "SIMILAR"
    ]
    assert operational == [
        ("entity:parse-resume", "LEADS_TO", "entity:score-resume", "entity:has-parsed-resume"),
        ("entity:score-resume", "REQUIRES", "entity:parse-resume", "entity:has-parsed-resume"),
    ]
    assert graph["meta"]["inferred_edge_count"] == 2
    assert graph["meta"]["input_type"] == "entity-profiles"
    node = next(n for n in graph["nodes"] if n["id"] == "entity:score-resume")
    assert node["preconditions"] == ["entity:has-parsed-resume", "NOT entity:scored"]


def test_graph_from_export_defaults_and_similarity():
    graph = build_entity_graph(TOY_EXPORT, "toy.json")
    meta = graph["meta"]
    assert (meta["mode"], meta["top_k"], meta["min_score"]) == ("contextual", DEFAULT_TOP_K, DEFAULT_MIN_SCORE)
    assert meta["input_type"] == "ctxfst-export"
    assert meta["edge_count"] == len(graph["edges"]) and meta["extra_edge_count"] == 0
    pairs = {(e["source"], e["target"]): e for e in graph["edges"]}
    assert ("entity:fastapi", "entity:python") in pairs
    assert pairs[("entity:fastapi", "entity:python")]["shared_chunk_count"] == 1
    assert all("entity:gardening" not in pair for pair in pairs)
    scores = [e["score"] for e in graph["edges"]]
    assert scores == sorted(scores, reverse=True)


def test_a_graph_rebuilt_after_an_edit_is_the_graph_a_fresh_build_writes(monkeypatch):
    """The pair cosines kept from the last build never leak into the next one's floats."""
    import copy

    from ctxfst_tui.core.text.tfidf import CosineMemo

    edited = copy.deepcopy(TOY_EXPORT)
    edited["chunks"][1]["context"] = "Python data pipelines with Pandas and FastAPI services"
    builds = [TOY_EXPORT, edited, TOY_EXPORT, edited]
    kept = [graph_module.dumps(build_entity_graph(data, "toy.json", min_score=0.0)) for data in builds]
    fresh = []
    for data in builds:
        monkeypatch.setattr(graph_module, "_COSINES", CosineMemo())
        fresh.append(graph_module.dumps(build_entity_graph(data, "toy.json", min_score=0.0)))
    assert kept == fresh and kept[0] != kept[1]


def test_graph_metadata_mode_ignores_chunk_text():
    contextual = build_entity_graph(TOY_EXPORT, "toy.json", min_score=0.0)
    metadata = build_entity_graph(TOY_EXPORT, "toy.json", mode="metadata", min_score=0.0)
    assert metadata["meta"]["mode"] == "metadata"
    # Only names/types/aliases are compared: the two frameworks share "type framework".
    score = {(e["source"], e["target"]): e["score"] for e in metadata["edges"]}
    assert score[("entity:fastapi", "entity:pandas")] > score.get(("entity:fastapi", "entity:python"), 0.0)
    assert metadata["edges"] != contextual["edges"]
    profiles = build_entity_profiles(TOY_EXPORT, "toy.json")
    from_profiles = build_entity_graph(profiles, "p.json", mode="metadata", min_score=0.0)
    assert from_profiles["edges"] == metadata["edges"]


def test_graph_top_k_and_min_score_filter_edges():
    loose = build_entity_graph(TOY_EXPORT, "toy.json", top_k=3, min_score=0.0)
    tight = build_entity_graph(TOY_EXPORT, "toy.json", top_k=1, min_score=0.0)
    strict = build_entity_graph(TOY_EXPORT, "toy.json", top_k=3, min_score=1.0)
    assert len(loose["edges"]) == 6  # every pair of the 4 entities
    assert len(tight["edges"]) < len(loose["edges"])
    assert strict["edges"] == []
    assert all(edge["score"] >= 0.0 for edge in loose["edges"])


@pytest.mark.parametrize(
    "options",
    [{"top_k": 0}, {"min_score": 1.5}, {"min_score": -0.1}, {"mode": "semantic"}],
)
def test_graph_rejects_bad_options(options):
    with pytest.raises(GraphInputError):
        build_entity_graph(TOY_EXPORT, "toy.json", **options)


def test_graph_rejects_malformed_input():
    with pytest.raises(GraphInputError, match="'entities'"):
        build_entity_graph({"entities": {}}, "bad.json")
    with pytest.raises(GraphInputError, match="JSON object"):
        build_entity_graph(["not", "an", "object"], "bad.json")


def test_extra_edges_merged_and_malformed_ones_skipped_with_a_warning():
    warnings: list[str] = []
    extra = [
        {"source": "entity:python", "target": "entity:gardening", "relation": "EVIDENCE", "score": 0.5},
        {"source": "entity:python", "relation": "IMPLIES"},
        "not an object",
        {"source": "entity:pandas", "target": "entity:python", "relation": "BLOCKED_BY", "properties": {"why": "x"}},
    ]
    graph = build_entity_graph(TOY_EXPORT, "toy.json", extra_edges=extra, on_warning=warnings.append)
    appended = graph["edges"][-2:]
    assert appended == [
        {"source": "entity:python", "target": "entity:gardening", "relation": "EVIDENCE", "score": 0.5, "properties": {}},
        {"source": "entity:pandas", "target": "entity:python", "relation": "BLOCKED_BY", "properties": {"why": "x"}},
    ]
    assert graph["meta"]["extra_edge_count"] == 2
    assert graph["meta"]["edge_count"] == len(graph["edges"])
    assert warnings == ["extra-edges[1] missing source/target, skipping", "extra-edges[2] is not an object, skipping"]


@pytest.mark.parametrize(
    "edge, shown",
    [
        ({"source": "entity:pandas", "target": "entity:python", "relation": "MADE_UP"}, "'MADE_UP'"),
        ({"source": "entity:pandas", "target": "entity:python", "relation": "similar"}, "'similar'"),  # case counts
        ({"source": "entity:pandas", "target": "entity:python"}, "''"),  # no relation at all
        ({"source": "entity:pandas", "target": "entity:python", "relation": 7}, "7"),
    ],
)
def test_unknown_extra_edge_relation_is_an_error_as_in_the_reference(edge, shown):
    """The reference's build_entity_graph.py exits 1 on an unknown relation; it never keeps the edge."""
    good = {"source": "entity:python", "target": "entity:pandas", "relation": "IMPLIES"}
    with pytest.raises(GraphInputError) as raised:
        build_entity_graph(TOY_EXPORT, "toy.json", extra_edges=[good, edge], on_warning=pytest.fail)
    message = str(raised.value)
    assert message.startswith(f"extra-edges[1] has unknown relation {shown}, allowed: ")
    assert "BLOCKED_BY, COMPLETED, EVIDENCE, IMPLIES, LEADS_TO, REQUIRES, SIMILAR" in message
    assert "\n" not in message


@pytest.mark.parametrize("bad_file_content", [{"edges": []}, "edges", 3])
def test_extra_edges_must_be_an_array(bad_file_content):
    with pytest.raises(GraphInputError, match="must be an array"):
        build_entity_graph(TOY_EXPORT, "toy.json", extra_edges=bad_file_content)


def test_networkx_view_and_graphml_roundtrip(tmp_path):
    graph = build_entity_graph(
        WORLD_MODEL_PROFILES,
        "wm.json",
        min_score=0.0,
        extra_edges=[{"source": "entity:rescore", "target": "entity:elsewhere", "relation": "IMPLIES"}],
    )
    nx_graph = to_networkx(graph)
    assert isinstance(nx_graph, nx.MultiDiGraph)
    assert nx_graph.number_of_edges() == len(graph["edges"])
    assert nx_graph.nodes["entity:parse-resume"]["type"] == "action"
    assert "entity:elsewhere" in nx_graph  # extra edges may point outside the node list

    path = tmp_path / "graph.graphml"
    write_graphml(graph, path)
    loaded = nx.read_graphml(path)
    assert set(loaded.nodes) == set(nx_graph.nodes)
    assert loaded.number_of_edges() == nx_graph.number_of_edges()
    score_node = loaded.nodes["entity:score-resume"]
    assert score_node["preconditions"] == "entity:has-parsed-resume, NOT entity:scored"
    relations = sorted(attrs["relation"] for _u, _v, attrs in loaded.edges(data=True))
    assert "LEADS_TO" in relations and "REQUIRES" in relations
    inferred = [a for _u, _v, a in loaded.edges(data=True) if a["relation"] == "LEADS_TO"]
    assert inferred[0]["properties.inferred_via"] == "entity:has-parsed-resume"
