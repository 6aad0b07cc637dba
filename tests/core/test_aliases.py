"""Alias clustering: each kind of evidence, tiers, false friends, canonical choice, determinism."""
from __future__ import annotations

import json
import random
import re
from importlib import resources

import pytest

from ctxfst_tui.core.entities.aliases import (
    AliasTable,
    Cluster,
    clusters_to_json,
    default_table,
    fingerprint,
    suggest_clusters,
)

EMPTY = {"entries": [], "distinct": []}  # heuristics alone, without the curated table


def ent(name: str, eid: str | None = None, aliases: list[str] | None = None, type: str = "tool") -> dict:
    eid = eid or "entity:" + (re.sub(r"[^a-z0-9]+", "-", name.lower().replace("+", "p").replace("#", "sharp")).strip("-") or "x")
    return {"id": eid, "name": name, "type": type, "aliases": aliases or []}


def together(clusters: list[Cluster], a: str, b: str, tier: str | None = None) -> bool:
    return any(a in c.members and b in c.members and (tier is None or c.tier == tier) for c in clusters)


def only(clusters: list[Cluster]) -> Cluster:
    assert len(clusters) == 1, clusters
    return clusters[0]


# ---------------------------------------------------------------- evidence kinds


def test_fingerprint_keeps_symbols_apart():
    assert fingerprint("Next.js") == fingerprint("NextJS") == fingerprint("next js") == "nextjs"
    assert len({fingerprint(x) for x in ("C", "C++", "C#", "F#")}) == 4
    assert fingerprint("C Sharp") == fingerprint("C#") and fingerprint("C Plus Plus") == fingerprint("C++")
    assert fingerprint("Café") == "cafe"


def test_key_collision_is_sure():
    c = only(suggest_clusters([ent("Next.js"), ent("NextJS", "entity:nextjs"), ent("nextjs", "entity:nextjs-2")], table=EMPTY))
    assert c.tier == "sure" and sorted(c.members) == ["entity:next-js", "entity:nextjs", "entity:nextjs-2"]
    assert any("case, punctuation or spacing" in r for r in c.reasons)


def test_declared_alias_equal_to_another_name_is_sure():
    c = only(suggest_clusters([ent("Kafka", aliases=["Apache Kafka"]), ent("Apache Kafka")], table=EMPTY))
    assert c.tier == "sure"
    assert any("declares the alias 'Apache Kafka'" in r for r in c.reasons)
    # an alias equal to another entity's alias
    c = only(suggest_clusters([ent("Microsoft Entra ID", aliases=["AAD"]), ent("Azure Active Directory", aliases=["aad"])], table=EMPTY))
    assert c.tier == "sure" and any("declares the alias" in r for r in c.reasons)
    # ... but only 'review' when the names look like different things (Postgres + 'ql' without the table)
    c = only(suggest_clusters([ent("PostgreSQL", aliases=["PG"]), ent("Postgres", aliases=["pg"])], table=EMPTY))
    assert c.tier == "review" and c.canonical == "entity:postgresql"


def test_declared_acronym_alias_is_sure():
    c = only(suggest_clusters([ent("PostgreSQL", aliases=["Postgres", "PG"]), ent("PG")], table=EMPTY))
    assert (c.tier, c.canonical, c.members) == ("sure", "entity:postgresql", ["entity:postgresql", "entity:pg"])


def test_numeronyms():
    for short, long in (("K8s", "Kubernetes"), ("i18n", "Internationalization"), ("a11y", "Accessibility"), ("l10n", "Localisation")):
        c = only(suggest_clusters([ent(short), ent(long)], table=EMPTY))
        assert c.tier == "sure" and any("numeronym" in r for r in c.reasons)
        assert c.canonical == ent(long)["id"]
    assert suggest_clusters([ent("K9s"), ent("Kubernetes")], table=EMPTY) == []  # wrong count


def test_acronyms():
    c = only(suggest_clusters([ent("AWS"), ent("Amazon Web Services")], table=EMPTY))
    assert c.tier == "sure" and c.canonical == "entity:amazon-web-services"
    c = only(suggest_clusters([ent("IAM"), ent("Identity and Access Management")], table=EMPTY))
    assert c.tier == "sure"  # stopword skipped
    # camel-case and two-letter acronyms are only plausible without the table
    c = only(suggest_clusters([ent("JS"), ent("JavaScript")], table=EMPTY))
    assert c.tier == "review" and any("camel-case" in r for r in c.reasons)
    c = only(suggest_clusters([ent("PR"), ent("Pull Request")], table=EMPTY))
    assert c.tier == "review"
    # ... and sure with it
    assert only(suggest_clusters([ent("JS"), ent("JavaScript")])).tier == "sure"
    # a lower-case name is not an acronym (Go is not 'Google Outlook')
    assert suggest_clusters([ent("Go"), ent("Google Outlook")], table=EMPTY) == []


def test_phrase_abbreviation():
    c = only(suggest_clusters([ent("VS Code"), ent("Visual Studio Code")], table=EMPTY))
    assert c.tier == "review" and c.canonical == "entity:visual-studio-code"
    assert together(suggest_clusters([ent("K8s Operator"), ent("Kubernetes Operator")], table=EMPTY), "entity:k8s-operator", "entity:kubernetes-operator")


def test_vendor_prefix_and_packaging_suffix():
    for a, b in (("Apache Spark", "Spark"), ("Google Cloud Build", "Cloud Build"), ("Vue.js", "Vue"),
                 ("MongoDB", "Mongo"), ("Golang", "Go"), ("Tailwind CSS", "Tailwind")):
        c = only(suggest_clusters([ent(a), ent(b)], table=EMPTY))
        assert c.tier == "sure", (a, b)
    # a short or generic vendor-stripped core is only plausible
    assert only(suggest_clusters([ent("Amazon S3"), ent("S3")], table=EMPTY)).tier == "review"
    assert only(suggest_clusters([ent("AWS Lambda"), ent("Lambda")], table=EMPTY)).tier == "review"
    # different vendors, same product word: nothing
    assert suggest_clusters([ent("Apple Pay"), ent("Google Pay")], table=EMPTY) == []


def test_curated_table():
    ents = [ent("PostgreSQL"), ent("Postgres")]
    assert suggest_clusters(ents, table=EMPTY) == []  # 'Postgres' + 'ql' is a word extension for heuristics
    c = only(suggest_clusters(ents))
    assert c.tier == "sure" and any("curated table" in r for r in c.reasons)
    c = only(suggest_clusters([ent("Microsoft Entra ID"), ent("Azure AD")]))
    assert c.tier == "sure" and any("former name" in r for r in c.reasons)
    # a form listed under two entries is ambiguous: review, one suggestion per meaning
    cl = suggest_clusters([ent("ES"), ent("Elasticsearch"), ent("ECMAScript"), ent("JavaScript")])
    assert together(cl, "entity:es", "entity:elasticsearch", "review")
    assert together(cl, "entity:es", "entity:ecmascript", "review")
    assert together(cl, "entity:ecmascript", "entity:javascript", "sure")
    assert not together(cl, "entity:elasticsearch", "entity:javascript")


def test_shipped_table_is_valid_and_large():
    data = json.loads(resources.files("ctxfst_tui.core.entities.data").joinpath("tech_aliases.json").read_text("utf-8"))
    assert len(data["entries"]) >= 150
    for e in data["entries"]:
        assert isinstance(e["name"], str) and e["name"]
        forms = [e["name"], *e.get("aliases", []), *e.get("former", [])]
        assert len({fingerprint(f) for f in forms}) == len(forms), e  # no form twice in one entry
    table = default_table()
    assert table.lookup("golang") and table.lookup("K8s") == table.lookup("Kubernetes")
    assert len(table.lookup("ES")) == 2  # JavaScript and Elasticsearch
    assert all(len(p) == 2 for p in data["distinct"])
    # a table can be passed as data, as an AliasTable, or narrowed for held-out evaluation
    small = AliasTable.from_data({"entries": [{"name": "Kubernetes", "aliases": ["kube"]}]})
    assert only(suggest_clusters([ent("kube"), ent("Kubernetes")], table=small)).tier == "sure"
    assert not table.without(["Kubernetes"]).lookup("K8s")


def test_fuzzy_typos_and_plurals_are_review():
    c = only(suggest_clusters([ent("Kubernetes"), ent("Kuberentes")], table=EMPTY))
    assert c.tier == "review" and any("rapidfuzz" in r for r in c.reasons)
    c = only(suggest_clusters([ent("GitHub Action"), ent("GitHub Actions")], table=EMPTY))
    assert c.tier == "review" and any("plural" in r for r in c.reasons)
    # different first letters or digits: never a typo
    assert suggest_clusters([ent("Python"), ent("Cython")], table=EMPTY) == []
    assert suggest_clusters([ent("Python 2"), ent("Python 3")], table=EMPTY) == []


def test_co_mention_in_chunk_context():
    ents = [ent("Gemini"), ent("Bard")]
    assert suggest_clusters(ents, table=EMPTY) == []
    chunks = [{"id": "ai:assistants", "entities": ["entity:gemini"], "context": "Google's assistant Gemini (formerly Bard) answers questions"}]
    c = only(suggest_clusters(ents, chunks, table=EMPTY))
    assert c.tier == "review" and any("chunk ai:assistants writes" in r for r in c.reasons)
    # an acronym defined in a context is sure
    ents = [ent("Key Vault Service"), ent("KVS")]
    chunks = [{"id": "a:b", "context": "Secrets live in the Key Vault Service (KVS) of the platform"}]
    assert only(suggest_clusters(ents, chunks, table=EMPTY)).tier == "sure"
    # linking from the same chunks is reported and lowers the bar for near spellings
    ents = [ent("Celery"), ent("Celary")]
    chunks = [{"id": "a:b", "entities": ["entity:celery", "entity:celary"], "context": "x"}]
    c = only(suggest_clusters(ents, chunks, table=EMPTY))
    assert any("co-mentioned" in r for r in c.reasons)


def test_co_mention_lowers_the_fuzzy_bar():
    ents = [ent("Grafana"), ent("Grafona")]  # 7 letters, one edit: a typo anyway
    assert only(suggest_clusters(ents, table=EMPTY)).tier == "review"
    ents = [ent("Tempo"), ent("Tmepo")]  # 5 letters: too short alone
    assert suggest_clusters(ents, table=EMPTY) == []
    chunks = [{"id": "a:b", "entities": ["entity:tempo", "entity:loki"]}, {"id": "a:c", "entities": ["entity:tmepo", "entity:loki"]}]
    c = only(suggest_clusters(ents + [ent("Loki")], chunks, table=EMPTY))
    assert c.tier == "review" and any("entity:loki" in r for r in c.reasons)


# ---------------------------------------------------------------- false friends and guards

FALSE_FRIENDS = [
    ("Java", "JavaScript"), ("Go", "Google"), ("React", "React Native"), ("Redis", "Redux"),
    ("Kafka", "Kafka Streams"), ("Apache Kafka", "Kafka Streams"), ("C", "C++"), ("C#", "C++"), ("C", "C#"),
    ("Node.js", "Deno"), ("Node", "Deno"), ("Angular", "AngularJS"), ("Preact", "React"), ("MySQL", "MSSQL"),
    ("Vitest", "Vitess"), ("GraphQL", "GraphiQL"), ("Python", "Cython"), ("Svelte", "SvelteKit"),
    ("Next.js", "Nuxt.js"), ("Docker", "Docker Compose"), ("Spring", "Spring Boot"), ("Swift", "SwiftUI"),
    ("Elasticsearch", "OpenSearch"), ("Terraform", "OpenTofu"), ("Kubernetes", "kubectl"), ("npm", "pnpm"),
    ("SQL", "NoSQL"), ("Python 2", "Python 3"), ("Ruby", "Ruby on Rails"), ("Vite", "Vitest"), ("Git", "GitHub"),
    ("Scala", "Scala.js"), ("Visual Studio", "Visual Studio Code"), ("MariaDB", "MySQL"), ("Objective-C", "C"),
]
# pairs the generic guards separate on their own (no curated data at all)
GENERIC_FALSE_FRIENDS = [p for p in FALSE_FRIENDS if p not in {
    ("Angular", "AngularJS"), ("Scala", "Scala.js"), ("Vitest", "Vitess"), ("GraphQL", "GraphiQL"), ("Next.js", "Nuxt.js"),
}]


@pytest.mark.parametrize("a, b", FALSE_FRIENDS)
def test_false_friends_never_clustered(a, b):
    assert suggest_clusters([ent(a), ent(b)]) == []


@pytest.mark.parametrize("a, b", GENERIC_FALSE_FRIENDS)
def test_false_friends_kept_apart_by_generic_guards(a, b):
    assert suggest_clusters([ent(a), ent(b)], table=EMPTY) == []


def test_false_friends_not_folded_transitively():
    names = sorted({n for p in FALSE_FRIENDS for n in p} | {"JS", "ECMAScript", "Golang", "RN", "K8s", "CPP", "CSharp", "Kafka Stream"})
    ents, seen = [], set()
    for n in names:
        e = ent(n)
        while e["id"] in seen:
            e["id"] += "-2"
        seen.add(e["id"])
        ents.append(e)
    ids = {e["name"]: e["id"] for e in ents}
    for table in (None, EMPTY):
        clusters = suggest_clusters(ents, table=table)
        for a, b in FALSE_FRIENDS if table is None else GENERIC_FALSE_FRIENDS:
            assert not together(clusters, ids[a], ids[b]), (a, b, table)
    clusters = suggest_clusters(ents)
    assert together(clusters, ids["JS"], ids["JavaScript"], "sure")
    assert together(clusters, ids["C++"], ids["CPP"], "sure") and together(clusters, ids["C#"], ids["CSharp"], "sure")


def test_declared_alias_cannot_join_a_curated_distinct_pair():
    # an author who lists 'JS' under Java does not make Java the same as JavaScript
    assert suggest_clusters([ent("Java", aliases=["JS"]), ent("JavaScript")]) == []


def test_ids_never_fold_distinct_names():
    # slugs that collapse C++ and C# to 'c' do not matter: the names decide
    ents = [ent("C", "entity:c"), ent("C++", "entity:c-"), ent("C#", "entity:c--"), {"id": "entity:c-lang", "name": "C"}]
    clusters = suggest_clusters(ents, table=EMPTY)
    assert [c.members for c in clusters] == [["entity:c", "entity:c-lang"]]
    # without a name, the id's last part is the name
    c = only(suggest_clusters([{"id": "entity:kubernetes"}, ent("K8s")], table=EMPTY))
    assert c.canonical == "entity:kubernetes"


def test_operational_types_downgrade_to_review():
    c = only(suggest_clusters([ent("Deployed", "entity:deployed", type="state"), ent("deployed", "entity:deployed-tool")], table=EMPTY))
    assert c.tier == "review" and any("types differ" in r for r in c.reasons)


# ---------------------------------------------------------------- canonical, tiers, output


def test_canonical_choice():
    # the fullest official name wins over an acronym with more links
    chunks = [{"id": f"a:{i}", "entities": ["entity:js"]} for i in range(5)] + [{"id": "a:x", "entities": ["entity:javascript"]}]
    c = only(suggest_clusters([ent("JS"), ent("JavaScript")], chunks))
    assert c.canonical == "entity:javascript" and "official name" in c.reasons[0]
    # between equals, the entity with more chunk links
    chunks = [{"id": "a:1", "entities": ["entity:nextjs"]}, {"id": "a:2", "entities": ["entity:nextjs"]}]
    c = only(suggest_clusters([ent("Next js", "entity:next-js"), ent("NextJS", "entity:nextjs")], chunks, table=EMPTY))
    assert c.canonical == "entity:nextjs" and "2 chunk links" in c.reasons[0]
    # the longer name otherwise
    c = only(suggest_clusters([ent("Spark"), ent("Apache Spark")], table=EMPTY))
    assert c.canonical == "entity:apache-spark" and c.members[0] == c.canonical


def test_tiers_and_json_shape():
    ents = [ent("Kubernetes"), ent("K8s"), ent("Kuberentes"), ent("Golang"), ent("Go")]
    clusters = suggest_clusters(ents)
    assert [c.tier for c in clusters] == sorted((c.tier for c in clusters), key=["sure", "review"].index)
    data = clusters_to_json(clusters)
    assert set(data) == {"clusters"}
    for c in data["clusters"]:
        assert set(c) == {"tier", "canonical", "members", "reasons"}
        assert c["tier"] in ("sure", "review") and c["canonical"] == c["members"][0] and c["reasons"]
    json.dumps(data)
    assert together(clusters, "entity:go", "entity:golang", "sure")
    assert together(clusters, "entity:kubernetes", "entity:k8s", "sure")


def test_same_id_in_several_documents_is_one_entity():
    ents = [ent("Kubernetes", aliases=["kube"]), ent("Kubernetes", aliases=["K8s"]), ent("Kube", "entity:kube-2")]
    c = only(suggest_clusters(ents, table=EMPTY))
    assert c.members == ["entity:kubernetes", "entity:kube-2"]


def test_deterministic():
    names = ["Kubernetes", "K8s", "kube", "JS", "JavaScript", "ECMAScript", "ES", "Elasticsearch", "Java", "Go", "Golang",
             "Google", "Postgres", "PostgreSQL", "PG", "Kuberentes", "Apache Kafka", "Kafka", "Kafka Streams", "TF",
             "Terraform", "TensorFlow", "VS Code", "Visual Studio Code"]
    ents = [ent(n) for n in names]
    chunks = [{"id": "a:b", "entities": ["entity:js", "entity:kafka"], "context": "JavaScript (JS) clients for Kafka"}]
    first = clusters_to_json(suggest_clusters(ents, chunks))
    for seed in range(5):
        shuffled = ents[:]
        random.Random(seed).shuffle(shuffled)
        assert clusters_to_json(suggest_clusters(shuffled, chunks)) == first


def test_bad_input_is_ignored():
    assert suggest_clusters([{"name": "no id"}, "x", {"id": 3}, {"id": "entity:a", "name": None, "aliases": "A"}]) == []
    assert suggest_clusters([]) == []


def test_shared_alias_between_known_distinct_entities_is_not_a_merge():
    ents = [ent("JavaScript", aliases=["ES"]), ent("Elasticsearch", aliases=["ES"])]
    assert suggest_clusters(ents) == []
    # without the table a shared alias is evidence, but names that differ by a word make it review
    c = only(suggest_clusters([ent("Kafka", aliases=["KS"]), ent("Kafka Streams", aliases=["KS"])], table=EMPTY))
    assert c.tier == "review"
