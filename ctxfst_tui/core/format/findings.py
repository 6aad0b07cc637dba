"""Findings: one problem in one file, at one line, with a stable rule code."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclass
class Finding:
    """A problem found in a document; ``line``/``column`` are 1-based (0 = whole file)."""

    severity: str
    rule: str
    message: str
    line: int = 0
    column: int = 0
    file: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = {
            "severity": self.severity,
            "line": self.line,
            "column": self.column,
            "rule": self.rule,
            "message": self.message,
        }
        data.update(self.extra)
        return data

    def one_line(self) -> str:
        """The ``file:line:column: severity [rule] message`` form printed by the CLI."""
        where = self.file or "<input>"
        if self.line:
            where += f":{self.line}"
            if self.column:
                where += f":{self.column}"
        return f"{where}: {self.severity} [{self.rule}] {self.message}"
