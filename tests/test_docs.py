"""Docs that match the code: every variable the code reads and every API operation."""

from __future__ import annotations

import re
from pathlib import Path

from wirecat.api import api

ROOT = Path(__file__).resolve().parent.parent


def variables_read_by_the_code() -> set[str]:
    names: set[str] = set()
    sources = [
        *ROOT.joinpath("wirecat").rglob("*.py"),
        *ROOT.joinpath("archive").rglob("*.py"),
        ROOT / "Procfile",
    ]
    for path in sources:
        names |= set(re.findall(r"\bWIRECAT_[A-Z_]+\b", path.read_text()))
    return names


def test_every_variable_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    found = variables_read_by_the_code()
    assert "WIRECAT_STATE_DIR" in found and "WIRECAT_DB" in found
    missing = sorted(name for name in found if f"`{name}`" not in readme)
    assert missing == [], "document these in README.md's configuration table"
    assert "`CELERY_BROKER_URL`" in readme


def test_every_api_operation_has_a_summary() -> None:
    schema = api.get_openapi_schema()
    operations = [
        (path, method, op)
        for path, methods in schema["paths"].items()
        for method, op in methods.items()
    ]
    assert operations
    assert [f"{m.upper()} {p}" for p, m, op in operations if not op.get("summary")] == []


def test_readme_has_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make run" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
