from __future__ import annotations

import io
from pathlib import Path

import pytest

from archive.store.blobs import blob_open, blob_put
from wirecat.errors import Invalid, NotFound


def test_blob_store_is_content_addressed_and_idempotent(_state_dir: Path) -> None:
    first = blob_put(io.BytesIO(b"hello bytes"))
    second = blob_put(io.BytesIO(b"hello bytes"))
    assert first == second
    assert first.size == 11
    assert first.path == f"blobs/{first.sha256[:2]}/{first.sha256[2:4]}/{first.sha256}"
    with blob_open(first.path) as handle:
        assert handle.read() == b"hello bytes"
    assert not [p for p in (_state_dir / "blobs").iterdir() if p.name.startswith(".incoming")]


@pytest.mark.parametrize(
    "path", ["../secret_key", "blobs/../../etc/passwd", "/etc/passwd", "blobs/aa/bb/not-a-hash", ""]
)
def test_blob_paths_are_never_taken_from_input(path: str) -> None:
    with pytest.raises(Invalid):
        blob_open(path)


def test_missing_blob_is_not_found() -> None:
    with pytest.raises(NotFound):
        blob_open("blobs/aa/bb/" + "a" * 64)
