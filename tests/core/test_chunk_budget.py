"""The chunk preview's budget rules (core): which size and overlap texts the chunker uses as they
are, and the one-line reason shown for the others. The chunk controls (tests/ui/test_chunk_controls.py)
show these reasons; here every case of the rule is checked without starting the workbench."""
from __future__ import annotations

import pytest

from ctxfst_tui.core.chunking.preview import Budget, parse_budget, size_range


def test_the_size_range_is_the_chunkers() -> None:
    assert size_range() == (32, 200000)


@pytest.mark.parametrize("typed", ["0", "1", "5", "31", "1.5e3", "-5", "40x", "200001", "+64", "6 4", "", "  "])
def test_an_invalid_size_is_refused_with_the_range_and_what_was_typed(typed: str) -> None:
    budget, problems = parse_budget("tokens", typed, "32")
    assert budget is None, f"typed {typed!r}"
    shown = typed.strip() or "empty"
    assert problems == {"size": f"Size must be a whole number from 32 to 200000 tokens, not {shown}."}, f"typed {typed!r}"


def test_the_unit_is_named_in_the_reason() -> None:
    assert parse_budget("chars", "5", "0")[1]["size"] == "Size must be a whole number from 32 to 200000 chars, not 5."


@pytest.mark.parametrize("typed", ["32", "40", "256", "200000", " 64 "])
def test_a_size_in_the_range_is_used_as_is(typed: str) -> None:
    assert parse_budget("tokens", typed, "0") == (Budget("tokens", int(typed), 0), {}), f"typed {typed!r}"


def test_the_overlap_is_at_most_half_the_size() -> None:
    assert parse_budget("tokens", "40", "20") == (Budget("tokens", 40, 20), {})
    assert parse_budget("tokens", "40", "32") == (
        None, {"overlap": "Overlap must be a whole number from 0 to 20 (half the size), not 32."})
    assert parse_budget("tokens", "41", "20") == (Budget("tokens", 41, 20), {})  # half rounds down
    assert parse_budget("tokens", "41", "21")[0] is None
    assert parse_budget("chars", "1024", "128") == (Budget("chars", 1024, 128), {})


@pytest.mark.parametrize("typed", ["-1", "2.5", "x", ""])
def test_an_overlap_that_is_not_a_whole_number_is_refused(typed: str) -> None:
    shown = typed or "empty"
    assert parse_budget("tokens", "256", typed) == (
        None, {"overlap": f"Overlap must be a whole number from 0 to 128 (half the size), not {shown}."}), f"typed {typed!r}"


def test_both_fields_can_be_wrong_at_once() -> None:
    budget, problems = parse_budget("tokens", "5", "x")
    assert budget is None
    assert problems == {
        "size": "Size must be a whole number from 32 to 200000 tokens, not 5.",
        "overlap": "Overlap must be a whole number from 0 to half the size, not x.",
    }


def test_the_defaults_are_the_chunkers() -> None:
    assert Budget.default() == Budget("tokens", 256, 32)
    assert Budget.default("chars") == Budget("chars", 1024, 128)
