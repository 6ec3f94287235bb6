"""Architecture rules that import-linter cannot express."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ["wirecat", "archive"]
WRITE_METHODS = {
    "create",
    "bulk_create",
    "update",
    "bulk_update",
    "update_or_create",
    "get_or_create",
    "delete",
    "save",
    "raw",
}
PROVIDER_MODULES = {
    "telethon",
    "pyrogram",
    "discord",
    "ijson",
    "mailbox",
    "imaplib",
    "smtplib",
    "slack_sdk",
    "whatsapp",
    "typedstream",
}


def project_files() -> list[Path]:
    files: list[Path] = []
    for app in APPS:
        files += [p for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts]
    return files


def message_writes(tree: ast.AST) -> list[int]:
    """Lines that call a write method on `Message.objects…` or name a Message table in SQL."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in WRITE_METHODS
        ):
            receiver = ast.unparse(node.func.value)
            if "Message.objects" in receiver and "MessageRevision" not in receiver:
                lines.append(node.lineno)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            sql = " ".join(node.value.upper().split())
            for verb in (
                "INSERT INTO ARCHIVE_MESSAGE ",
                "UPDATE ARCHIVE_MESSAGE ",
                "DELETE FROM ARCHIVE_MESSAGE ",
            ):
                if verb in sql + " ":
                    lines.append(node.lineno)
    return lines


def test_the_scanner_finds_writes() -> None:
    sample = ast.parse(
        "Message.objects.filter(pk=1).update(text='x')\n"
        "cursor.execute('UPDATE archive_message SET text = 1')\n"
        "MessageRevision.objects.create(text='fine')\n"
    )
    assert message_writes(sample) == [1, 2]


SINK = ROOT / "archive" / "store" / "sink"


def test_only_the_sink_writes_message_rows() -> None:
    offenders = []
    for path in project_files():
        if SINK in path.parents:  # the sink package, and nothing beside it
            continue
        for line in message_writes(ast.parse(path.read_text(), filename=str(path))):
            offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert offenders == [], "Message rows are written only by archive/store/sink/"
    assert SINK.is_dir() and not (SINK.parent / "sink.py").exists()
    # The sink's writes are where the scanner looks: it must find them, or it proves nothing.
    found = {
        path.name
        for path in SINK.rglob("*.py")
        if message_writes(ast.parse(path.read_text(), filename=str(path)))
    }
    assert {"inserts.py", "updates.py", "replies.py"} <= found, found


FEED_OWNER = ROOT / "archive" / "store" / "changes.py"


def change_writes(tree: ast.AST) -> list[int]:
    """Lines that write the changes feed: a write method on `Change.objects…`, or SQL that
    inserts, updates or deletes `archive_change` rows."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in WRITE_METHODS
            and "Change.objects" in ast.unparse(node.func.value)
        ):
            lines.append(node.lineno)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            sql = " ".join(node.value.upper().split()) + " "
            if any(
                verb in sql
                for verb in (
                    "INSERT INTO ARCHIVE_CHANGE ",
                    "UPDATE ARCHIVE_CHANGE ",
                    "DELETE FROM ARCHIVE_CHANGE ",
                )
            ):
                lines.append(node.lineno)
    return lines


def test_only_the_feed_owner_writes_the_changes_feed() -> None:
    offenders = []
    for path in project_files():
        if path == FEED_OWNER:
            continue
        for line in change_writes(ast.parse(path.read_text(), filename=str(path))):
            offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert offenders == [], "the changes feed is written only by archive/store/changes.py"
    assert change_writes(ast.parse(FEED_OWNER.read_text()))  # the scanner sees its writes


def test_only_connectors_import_provider_sdks() -> None:
    offenders = []
    for path in project_files():
        if "connectors" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in PROVIDER_MODULES:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    assert offenders == []
