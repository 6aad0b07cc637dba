"""diagnose --json is written as it is encoded, byte for byte what json.dumps gives."""
from __future__ import annotations

import json
from pathlib import Path

from ctxfst_tui.cli.documents import _print_json


def test_json_is_written_as_json_dumps_would_print_it(capsys) -> None:
    value = [{"filepath": Path("a/b.md"), "issues": [{"message": "здравствуйте – á", "n": 1.5, "ok": None,
                                                      "ids": list(range(20_000)), "empty": [], "e": {}}]}]
    capsys.readouterr()
    _print_json(value)
    assert capsys.readouterr().out == json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n"
