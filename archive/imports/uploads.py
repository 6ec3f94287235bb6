"""Uploaded export files: kept in the state folder under a generated name."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from archive.store.ids import new_public_id

_UNSAFE = re.compile(r"[^A-Za-z0-9._ -]+")


def safe_file_name(name: str) -> str:
    """A display-safe base name: no folders, no control or odd characters, never empty."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _UNSAFE.sub("_", base).strip(" .")[:120]
    return cleaned or "upload"


def upload_store(upload: UploadedFile) -> Path:
    """Move (or stream) an uploaded file into its own folder under the state folder."""
    folder = Path(settings.UPLOAD_DIR) / new_public_id("up")
    folder.mkdir(parents=True)
    target = folder / safe_file_name(upload.name or "upload")
    temp = getattr(upload, "temporary_file_path", None)
    if temp is not None:
        shutil.move(temp(), target)
    else:
        with target.open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
    return target
