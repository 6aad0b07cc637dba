"""The reference benchmark's two methods (reference-tfidf, reference-entity): their scoring rules on
hand-computed cases, and the expansion tables read from a file without running it. Their scores on
the benchmarks are in tests/cli/test_retrieval_reference_cli.py."""
from __future__ import annotations

import math

import pytest

from ctxfst_tui.core.retrieval.reference import (
    Expansions, ExpansionsError, ReferenceMethods, TfIdf, expand, load_expansions, words,
)

def test_only_ascii_words_count_and_stop_words_drop():
    assert words("The K8s rollout of Go_lang-x 部署 a 1st") == ["k8s", "rollout", "go_lang-x"]
    # A CJK letter touching a word is no word boundary, as in the reference's regex.
    assert words("用Docker部署 docker") == ["docker"]


def test_expansion_appends_the_words_of_every_phrase_the_query_contains():
    table = {"後端": ["backend"], "Go": ["go", "golang"], "absent": ["never"]}
    assert expand("我的 GO 後端", table) == "我的 GO 後端 backend go golang"


def test_tfidf_cosine_matches_the_formula():
    idx = TfIdf({"a": "alpha beta", "b": "beta gamma"})
    idf_alpha = math.log(3 / 2) + 1
    assert idx.idf["beta"] == pytest.approx(1.0)
    scores = idx.scores("alpha")
    assert scores["a"] == pytest.approx(idf_alpha / math.sqrt(idf_alpha ** 2 + 1))
    assert scores["b"] == 0.0
    assert idx.scores("unknown words") == {"a": 0.0, "b": 0.0}


def small_methods(expansions: Expansions | None = None) -> ReferenceMethods:
    export = {
        "entities": [{"id": "entity:go", "name": "Go"}, {"id": "entity:grpc", "name": "gRPC"},
                     {"id": "entity:k8s", "name": "Kubernetes"}],
        "chunks": [
            {"id": "c-go", "content": "Go services", "entities": ["entity:go"]},
            {"id": "c-grpc", "content": "gRPC streams", "entities": ["entity:grpc"]},
            {"id": "c-k8s", "content": "cluster rollout", "entities": ["entity:k8s"]},
        ],
    }
    profiles = {"entities": [{"id": "entity:go", "name": "Go", "keywords": ["golang"]},
                             {"id": "entity:grpc", "name": "gRPC", "keywords": ["streams"]},
                             {"id": "entity:k8s", "name": "Kubernetes", "keywords": ["rollout"]}]}
    graph = {"edges": [{"source": "entity:go", "target": "entity:grpc", "score": 0.8}]}
    return ReferenceMethods(export, profiles, graph, expansions)


def test_entity_seeds_are_damped_by_degree_and_one_hop_passes_0_65_of_the_edge():
    m = small_methods()
    direct = m.entity_index.scores("golang")
    reached = m.entity_scores("golang")
    seed = direct["entity:go"] / math.log2(2 + 1)  # go has one edge
    assert reached["entity:go"] == pytest.approx(seed)
    assert reached["entity:grpc"] == pytest.approx(seed * 0.8 * 0.65 / math.log2(2 + 1))
    assert "entity:k8s" not in reached  # neither a seed above 0.01 nor a neighbour
    # The chunk of the seed first, the neighbour's next, the unreached one last.
    assert m.entity("golang") == ["c-go", "c-grpc", "c-k8s"]
    # No chunk text has "golang" (only its profile does): every baseline score is 0, ties by id.
    assert m.baseline_scores("golang") == {"c-go": 0.0, "c-grpc": 0.0, "c-k8s": 0.0}
    assert m.tfidf("golang") == ["c-go", "c-grpc", "c-k8s"]


def test_ties_are_broken_by_chunk_id_and_expansions_change_the_query():
    m = small_methods()
    assert m.tfidf("部署") == ["c-go", "c-grpc", "c-k8s"]  # nothing matches: every score 0, ids in order
    expanded = small_methods(Expansions(baseline={"部署": ["rollout"]}, entity={"部署": ["rollout"]}))
    assert expanded.tfidf("部署")[0] == "c-k8s"
    assert expanded.entity("部署")[0] == "c-k8s"


def test_tables_are_read_from_a_python_file_without_running_it(tmp_path):
    script = tmp_path / "bench.py"
    script.write_text(
        'import sys\nsys.exit("ran")\n'
        'BASELINE_QUERY_EXPANSIONS = {"後端": ["backend"]}\n'
        'ENTITY_QUERY_EXPANSIONS: dict = {\n    "後端": ["backend", "api"],  # a comment\n}\n',
        encoding="utf-8")
    got = load_expansions(script)
    assert (got.baseline, got.entity, got.source) == ({"後端": ["backend"]}, {"後端": ["backend", "api"]}, str(script))


@pytest.mark.parametrize("name, text, message", [
    ("missing.py", 'BASELINE_QUERY_EXPANSIONS = {"a": ["b"]}\n', "missing.py: no ENTITY_QUERY_EXPANSIONS found"),
    ("call.py", 'BASELINE_QUERY_EXPANSIONS = dict(a=["b"])\nENTITY_QUERY_EXPANSIONS = {}\n',
     "call.py:1: BASELINE_QUERY_EXPANSIONS is not a plain literal"),
    ("syntax.py", "def (:\n", "syntax.py:1: not Python"),
    ("bad.yaml", "baseline: [1, 2\n", "bad.yaml:2: cannot parse"),
    ("shape.yaml", "baseline:\n  a: b\n", "shape.yaml: baseline: an expansion table maps phrases to lists of words"),
    ("other.json", '{"x": 1}', "other.json: expected a mapping with 'baseline' and/or 'entity' tables"),
])
def test_a_bad_tables_file_is_one_line_naming_it(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ExpansionsError) as err:
        load_expansions(path)
    assert str(err.value).startswith(str(tmp_path / message.split(":")[0]) + message[len(message.split(":")[0]):])
    assert "\n" not in str(err.value)


def test_tables_from_yaml(tmp_path):
    path = tmp_path / "tables.yaml"
    path.write_text("baseline:\n  後端: [backend]\nentity:\n  後端: [backend, api]\n", encoding="utf-8")
    assert load_expansions(path).entity == {"後端": ["backend", "api"]}
