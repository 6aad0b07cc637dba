"""The plain parts of the workbench's feedback: what "Validate folder" reports."""
from __future__ import annotations

from pathlib import Path

from ctxfst_tui.services.report import DocumentStatus, validation_summary


def test_validation_summary_counts_documents_errors_and_warnings_and_says_where_to_look():
    statuses = {
        Path("a.md"): DocumentStatus("errors", errors=4, warnings=1),
        Path("b.md"): DocumentStatus("warnings", warnings=2),
        Path("c.md"): DocumentStatus("valid"),
        Path("d.txt"): DocumentStatus("valid", infos=1),
    }
    text = validation_summary(statuses)
    assert text.splitlines() == [
        "4 documents checked: 1 with errors (4 errors), 1 with warnings only (2 warnings), 2 valid.",
        "✗ and ▲ mark them in the tree; 4 (Diagnosis) lists every finding.",
    ]
    one = validation_summary({Path("a.md"): DocumentStatus("errors", errors=1)}, unsaved=1)
    assert one.splitlines() == [
        "1 document checked: 1 with errors (1 error), 0 valid.",
        "✗ and ▲ mark them in the tree; 4 (Diagnosis) lists every finding.",
        "1 document with unsaved edits: its mark shows the edits, not the file.",
    ]
    assert validation_summary({Path("c.md"): DocumentStatus("valid")}) == "1 document checked: all valid."
    assert validation_summary({}) == "No documents in the folder (.md or .txt files)."
