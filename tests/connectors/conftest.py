"""Fixtures for importer tests: run a real import (detection, reader, batches, sink)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archive.imports.models import ImportJob
from archive.imports.services import import_job_create, import_run
from tests.connectors.imessage_support import build_modern

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# The shared real-export samples, present beside the project on developer machines and CI.
SAMPLES = Path(
    os.environ.get("WIRECAT_SAMPLES", Path(__file__).resolve().parents[3] / "shared" / "samples")
)


@pytest.fixture
def run_import(db: None) -> Callable[..., ImportJob]:
    """Import `path` like `wirecat import` does; returns the finished ImportJob."""

    def run(
        path: Path,
        *,
        format_name: str | None = None,
        account: str | None = None,
        batch_size: int | None = None,
        **kwargs: Any,
    ) -> ImportJob:
        job = import_job_create(
            source=path, format_name=format_name, account_name=account, **kwargs
        )
        return import_run(job_id=job.pk, batch_size=batch_size)

    return run


@pytest.fixture
def modern(tmp_path: Path) -> Path:
    """A modern Apple Messages export folder: chat.db and Attachments/ (imessage_support.py)."""
    return build_modern(tmp_path / "export")


def sample(relative: str) -> Path:
    """A shared sample; the test is skipped where the shared folder is not laid out."""
    path = SAMPLES / relative
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI lays out ../shared/samples, but {relative} is missing")
        pytest.skip(f"shared sample {relative} is not present on this machine")
    return path
