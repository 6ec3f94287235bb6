"""Docs that match the code: every variable the code reads, every management command, every
API operation, and every link between the documents."""

from __future__ import annotations

import re
from pathlib import Path

from wirecat.api import api

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
OPERATIONS = DOCS / "operations.md"
CODE_DIRS = ["wirecat", "archive", "tasks", "meetings", "notes"]


def variables_read_by_the_code() -> set[str]:
    names: set[str] = set()
    sources = [ROOT / "Procfile"]
    for folder in CODE_DIRS:
        sources += ROOT.joinpath(folder).rglob("*.py")
    for path in sources:
        names |= set(re.findall(r"\bWIRECAT_[A-Z_]+\b", path.read_text()))
    return names


def management_commands() -> set[str]:
    """Every command Django finds in the project's apps, wherever they keep them."""
    return {
        path.stem
        for folder in CODE_DIRS
        for path in ROOT.joinpath(folder).rglob("management/commands/*.py")
        if not path.name.startswith("_")
    }


def markdown_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    if (ROOT / "ARCHITECTURE.md").exists():
        files.append(ROOT / "ARCHITECTURE.md")
    return files


def link_targets(text: str) -> list[str]:
    """Targets of inline links and images and of reference definitions, outside code."""
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.DOTALL | re.MULTILINE)
    text = re.sub(r"`[^`\n]*`", "", text)
    inline = re.findall(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", text)
    references = re.findall(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", text, re.MULTILINE)
    return inline + references


def test_every_variable_is_in_the_operations_guide() -> None:
    guide = OPERATIONS.read_text()
    found = variables_read_by_the_code()
    assert "WIRECAT_STATE_DIR" in found and "WIRECAT_DB" in found
    missing = sorted(name for name in found if f"`{name}`" not in guide)
    assert missing == [], "document these in docs/operations.md's configuration table"
    assert "`CELERY_BROKER_URL`" in guide


def test_every_management_command_is_in_the_operations_guide() -> None:
    guide = OPERATIONS.read_text()
    commands = management_commands()
    assert {"start", "import", "createowner"} <= commands
    missing = sorted(
        name
        for name in commands
        if not re.search(rf"(?:\bwirecat|\bmanage\.py) {re.escape(name)}\b", guide)
    )
    assert missing == [], "document these in docs/operations.md's commands table"


def test_every_relative_link_resolves() -> None:
    broken = []
    for document in markdown_files():
        for target in link_targets(document.read_text()):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
                continue  # http(s), mailto and the like; anchors within the same page
            path = target.split("#", 1)[0].split("?", 1)[0]
            if not (document.parent / path).exists():
                broken.append(f"{document.relative_to(ROOT)}: {target}")
    assert broken == []


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


def _architecture_paths() -> set[str]:
    """Every path ARCHITECTURE.md names: in backticks, and the rooms of its tree."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    named = set(re.findall(r"`((?:archive|wirecat|tasks|tests|bench)/[\w./<>-]*)`", text))
    tree = text.split("```", 2)[1]
    parent = ""
    for line in tree.splitlines():
        match = re.match(r"^( *)([\w/]+/)(?:\s|$)", line)
        if not match:
            continue
        indent, names = match.groups()
        rooms = [n for n in re.split(r"\s+", line.strip().split("  ")[0]) if n.endswith("/")]
        if not indent:
            parent = names
            named |= set(rooms)
        else:
            named |= {parent + room for room in rooms}
    return {n for n in named if "<" not in n}


def test_every_package_the_architecture_names_exists() -> None:
    paths = _architecture_paths()
    assert {"archive/store/", "archive/gateway/", "archive/connectors/", "tasks/"} <= paths
    missing = sorted(p for p in paths if not (ROOT / p.rstrip("/")).exists())
    assert missing == [], "ARCHITECTURE.md names these, and they do not exist"


def test_every_capability_is_in_the_architecture() -> None:
    from archive.capabilities import CAPABILITIES

    paths = _architecture_paths()
    assert sorted(c for c in CAPABILITIES if f"archive/{c}/" not in paths) == []
