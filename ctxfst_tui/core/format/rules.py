"""Every rule's severity, in one table: validation, diagnosis, the tree, the overview and the
Diagnosis view all take a finding's severity from here, so one rule has one severity everywhere.

Validation and diagnosis ask different questions and some of their findings are different
findings with different names (the reference does the same: ``validate_chunks.py`` warns "No YAML
frontmatter found", ``diagnose_chunks.py`` says "No valid chunks found" as an error):

- ``no-frontmatter`` [warning] (validate): the file is plain Markdown; it is still valid.
  ``no-valid-chunks`` [error] (diagnose): there is nothing to diagnose — no frontmatter, no
  ``chunks`` list, or no entry with an id (the message says which).
- ``missing-chunks`` [warning] (validate): the frontmatter has no ``chunks`` list; the diagnosis of
  such a file is ``no-valid-chunks``.
- ``chunk-not-mapping`` / ``chunk-missing-id`` [error] (validate): the entry is malformed;
  ``chunk-skipped`` [warning] (diagnose): the diagnosis skipped that entry (as the reference
  does, silently) and checked the others.
- ``entity-missing-link`` [warning]: a chunk names an entity in its context, or twice, without
  linking it; ``entity-unlinked-mention`` [info]: it names it once, in its content only.

Rules shared by both (``frontmatter-not-mapping``, ``chunks-not-list``, ``dependency-unknown``,
``file-*``, ``yaml-*``) are the same finding and have the same severity in both.
"""
from __future__ import annotations

ERROR, WARNING, INFO = "error", "warning", "info"

# Problems reading the file or its YAML (any rule starting with these): always errors.
PREFIX_SEVERITY = {"file-": ERROR, "yaml-": ERROR}

SEVERITY: dict[str, str] = {
    # ---- reading (core/format/document.py, frontmatter.py); file-* and yaml-* by prefix
    "frontmatter-unclosed": ERROR,
    "internal-error": ERROR,  # the validator crashed (services/report.py)
    # ---- validation (core/format/validate.py): the reference validate_chunks.py's rules
    "no-frontmatter": WARNING,
    "frontmatter-not-mapping": ERROR,
    "missing-chunks": WARNING,
    "chunks-not-list": ERROR,
    "entities-not-list": ERROR,
    "entity-not-mapping": ERROR,
    "entity-missing-field": ERROR,
    "entity-id-invalid": ERROR,
    "entity-duplicate-id": ERROR,
    "entity-unknown-type": WARNING,
    "chunk-not-mapping": ERROR,
    "chunk-missing-id": ERROR,
    "chunk-id-invalid": ERROR,
    "chunk-duplicate-id": ERROR,
    "chunk-missing-context": WARNING,
    "chunk-entities-not-list": ERROR,
    "entity-ref-not-string": ERROR,
    "entity-ref-unknown": ERROR,
    "created-at-invalid": ERROR,
    "version-invalid": ERROR,
    "priority-invalid": ERROR,
    "dependencies-not-list": ERROR,
    "dependency-not-string": ERROR,
    "dependency-unknown": WARNING,  # validate and diagnose
    "type-invalid": ERROR,
    "content-path-missing": WARNING,
    "content-path-misused": WARNING,
    "world-model-not-list": ERROR,
    "world-model-item-not-string": ERROR,
    "cost-invalid": ERROR,
    "idempotent-invalid": ERROR,
    "state-ref-unknown": ERROR,
    "state-ref-not-state": ERROR,
    "tag-unknown-id": ERROR,
    "tag-duplicate-id": ERROR,
    "tag-nested": ERROR,
    "tag-id-format": WARNING,
    "tag-stray-close": ERROR,
    "tag-unclosed": ERROR,
    "chunk-not-in-body": WARNING,
    # ---- diagnosis (core/diagnosis/): the reference diagnose_chunks.py's checks, and more
    "no-valid-chunks": ERROR,
    "chunk-skipped": WARNING,
    "diagnose-internal-error": ERROR,
    "similar-chunks": WARNING,
    "context-empty": ERROR,
    "context-short": WARNING,
    "context-long": INFO,
    "context-echo": WARNING,
    "context-placeholder": WARNING,
    "context-in-comment": WARNING,  # contextualize_chunks.py's <!-- Context: --> (context_comments.py)
    "context-conflict": WARNING,
    "chunk-small": INFO,
    "chunk-large": WARNING,
    "tags-ubiquitous": INFO,
    "tags-identical": WARNING,
    "id-format": WARNING,
    "id-rare-prefix": INFO,
    "entity-generic": WARNING,
    "entity-duplicate-name": WARNING,
    "entity-duplicate": WARNING,
    "entity-possible-duplicate": INFO,
    "entity-inconsistent": WARNING,
    "entity-undefined": ERROR,
    "entity-links-many": WARNING,
    "entity-unused": INFO,
    "entity-missing-link": WARNING,
    "entity-unlinked-mention": INFO,
    "entity-weak-link": INFO,
    "entity-alias-candidate": INFO,
    "dependency-external": INFO,
    "dependency-cycle": WARNING,
}


def severity_of(rule: str) -> str:
    """The severity of ``rule``; KeyError for a rule missing from the table (a bug: add it here)."""
    severity = SEVERITY.get(rule)
    if severity is None:
        severity = next((s for prefix, s in PREFIX_SEVERITY.items() if rule.startswith(prefix)), None)
    if severity is None:
        raise KeyError(f"rule {rule!r} has no severity in ctxfst_tui/core/format/rules.py")
    return severity
