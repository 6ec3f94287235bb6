"""Attachment bytes for the pages and the API: downloads and image thumbnails.

Provider file names and claimed MIME types are untrusted: a download is always served as
`application/octet-stream` with `Content-Disposition: attachment`, and a thumbnail is made
anew by Pillow from a decoded raster image (never the stored bytes, never SVG), so nothing
an export holds is ever rendered by the browser as a page."""

from __future__ import annotations

import io
import os
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from PIL import Image, UnidentifiedImageError

from archive.store.blobs import blob_open
from archive.store.models import Attachment
from wirecat.errors import Invalid, NotFound

THUMB_SIDE = 320
# Refuse to decode images larger than this many pixels (a "decompression bomb").
MAX_PIXELS = 40_000_000
RASTER = {"JPEG", "PNG", "GIF", "WEBP", "BMP", "TIFF"}


@dataclass(frozen=True)
class Download:
    attachment: Attachment
    name: str
    path: str  # the blob's path relative to the state folder

    def open(self) -> BinaryIO:
        """The stored bytes; NotFound when they are not on disk."""
        return _blob(self.path)


def _blob(path: str) -> BinaryIO:
    # A row whose path is no blob path has no bytes to give either: NotFound, as when the
    # blob was swept, for the pages and the API alike.
    try:
        return blob_open(path)
    except Invalid as exc:
        raise NotFound(str(exc)) from exc


def download_name(name: str, fallback: str) -> str:
    """A file name for Content-Disposition: the base name only, no control characters
    (so no header injection), at most 150 characters."""
    base = str(name).replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = "".join(c for c in base if not unicodedata.category(c).startswith("C"))
    cleaned = cleaned.strip(" .")[:150]
    return cleaned or fallback


def attachment_get(*, public_id: str) -> Attachment:
    found = Attachment.objects.select_related("message").filter(public_id=public_id).first()
    if found is None:
        raise NotFound(f"attachment {public_id[:40]!r} does not exist")
    return found


def attachment_download(*, public_id: str) -> Download:
    """What to send for a download; NotFound when the bytes were never stored or swept."""
    attachment = attachment_get(public_id=public_id)
    if not attachment.path:
        raise NotFound(
            f"{download_name(attachment.file_name, attachment.public_id)}: the export did not"
            " include this file's bytes (only its name and type are known)"
        )
    return Download(
        attachment, download_name(attachment.file_name, attachment.public_id), attachment.path
    )


def _thumb_path(sha256: str) -> Path:
    return Path(settings.STATE_DIR) / "thumbs" / sha256[:2] / f"{sha256}-{THUMB_SIDE}.png"


def attachment_thumbnail(*, public_id: str) -> Path:
    """A PNG of at most THUMB_SIDE pixels a side, made once per blob and kept in the state
    folder. NotFound for anything that is not a decodable raster image."""
    attachment = attachment_get(public_id=public_id)
    if not attachment.path or not attachment.sha256:
        raise NotFound("no stored image to show")
    target = _thumb_path(attachment.sha256)
    if target.is_file():
        return target
    with _blob(attachment.path) as stream:
        data = stream.read(64 << 20)
    Image.MAX_IMAGE_PIXELS = MAX_PIXELS
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.format not in RASTER:
                raise NotFound("not an image a thumbnail can be made of")
            image.thumbnail((THUMB_SIDE, THUMB_SIDE))
            converted = image.convert("RGBA" if "A" in image.getbands() else "RGB")
            out = io.BytesIO()
            converted.save(out, format="PNG", optimize=True)
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as exc:
        raise NotFound("not an image a thumbnail can be made of") from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".thumb-", dir=target.parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(out.getvalue())
    os.replace(tmp, target)
    return target
