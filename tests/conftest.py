"""Shared fixtures. Tests run the real migrations on a real SQLite file (never in memory,
never --no-migrations), with the bundled SQLite the backend uses."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import transaction
from django.test import Client

from archive.owner.services import login_code_issue, owner_set_password

OWNER_PASSWORD = "correct horse battery staple"


def pytest_configure(config: pytest.Config) -> None:
    # Pages render {% static %} without running collectstatic first; the hashed-manifest
    # storage that production uses is exercised by `wirecat start` instead.
    django_settings.STORAGES = {
        **django_settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture(autouse=True)
def _state_dir(settings: Any, tmp_path: Path) -> Iterator[Path]:
    """Blobs and other state files of a test go to its own folder."""
    state = tmp_path / "state"
    state.mkdir()
    settings.STATE_DIR = state
    settings.BLOB_DIR = state / "blobs"
    yield state


@pytest.fixture
def committed(
    django_capture_on_commit_callbacks: Any,
) -> Callable[[], AbstractContextManager[list[Any]]]:
    """`with committed() as callbacks:` — what is written inside acts as its own transaction:
    its after-commit callbacks run when the block ends, then are spent as a commit spends
    them. (The test's transaction never commits; a callback left pending in it would stand
    for the next write's, since an effect asked for twice in a transaction runs once.)"""

    @contextmanager
    def block() -> Iterator[list[Any]]:
        pending = transaction.get_connection().run_on_commit
        start = len(pending)
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            yield callbacks
        del pending[start:]

    return block


@pytest.fixture
def owner(db: None) -> Any:
    issued = login_code_issue()
    return owner_set_password(code=issued.code, password=OWNER_PASSWORD)


@pytest.fixture
def owner_client(owner: Any) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The architecture scans run first. They parse every source file with `ast`, and the
    CPython 3.11 these machines run can leave the AST converter's recursion
    counter off after an earlier deep-recursion error elsewhere in the process, failing
    every later `ast.parse` with "AST constructor recursion depth mismatch" (seen in full
    runs, never alone). Run before anything else, the scans see a fresh interpreter."""
    first = [item for item in items if item.path.name == "test_architecture.py"]
    items[:] = first + [item for item in items if item.path.name != "test_architecture.py"]
