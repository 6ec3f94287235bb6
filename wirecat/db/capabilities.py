"""The SQLite capabilities the schema needs, probed once per process.

Each capability is a statement that succeeds only when the runtime has it. A missing one
stops the process with a message naming what is missing and what to install, instead of a
confusing error from the first migration or search that needs it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

INSTALL_HINT = (
    "Install the bundled SQLite wheel WireCat depends on: `pip install 'sqlean.py>=3.45'` "
    "(Linux, macOS, Windows), or `pip install pysqlite3-binary` on Linux."
)


@dataclass(frozen=True)
class Capability:
    name: str
    probe: tuple[str, ...]  # statements run on a scratch in-memory connection
    min_version: tuple[int, int, int] = (0, 0, 0)


REQUIRED: list[Capability] = [
    Capability("SQLite 3.45 or newer", (), min_version=(3, 45, 0)),
    Capability("FTS5", ("CREATE VIRTUAL TABLE temp.cap_fts5 USING fts5(x)",)),
    Capability(
        "FTS5 unicode61 tokenizer with remove_diacritics 2",
        (
            "CREATE VIRTUAL TABLE temp.cap_u61 USING fts5("
            "x, tokenize='unicode61 remove_diacritics 2')",
        ),
    ),
    Capability(
        "FTS5 trigram tokenizer",
        (
            "CREATE VIRTUAL TABLE temp.cap_tri USING fts5("
            "x, tokenize='trigram remove_diacritics 1')",
        ),
    ),
    Capability(
        "FTS5 contentless_delete",
        ("CREATE VIRTUAL TABLE temp.cap_cd USING fts5(x, content='', contentless_delete=1)",),
    ),
    Capability("JSON functions", ("SELECT json_extract('{\"a\": 1}', '$.a')",)),
    Capability(
        "RETURNING clause",
        ("CREATE TEMP TABLE cap_ret(x)", "INSERT INTO cap_ret(x) VALUES (1) RETURNING x"),
    ),
]

_lock = threading.Lock()
_checked_modules: set[int] = set()


def missing_capabilities(driver: Any, required: list[Capability] | None = None) -> list[str]:
    """Names of the required capabilities `driver`'s SQLite lacks (empty when all present)."""
    missing: list[str] = []
    conn = driver.connect(":memory:")
    try:
        for cap in REQUIRED if required is None else required:
            if tuple(driver.sqlite_version_info) < cap.min_version:
                missing.append(cap.name)
                continue
            try:
                for statement in cap.probe:
                    conn.execute(statement).fetchall()
            except driver.Error:
                missing.append(cap.name)
    finally:
        conn.close()
    return missing


def ensure_capabilities(driver: Any) -> None:
    """Refuse to run on a SQLite that lacks what the schema needs. Probes once per process."""
    key = id(driver)
    if key in _checked_modules:
        return
    with _lock:
        if key in _checked_modules:
            return
        missing = missing_capabilities(driver)
        if missing:
            raise ImproperlyConfigured(
                f"The SQLite in use ({driver.sqlite_version}, from {driver.__name__}) lacks: "
                f"{', '.join(missing)}. {INSTALL_HINT}"
            )
        _checked_modules.add(key)


def reset_for_tests() -> None:
    with _lock:
        _checked_modules.clear()
