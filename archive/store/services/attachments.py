"""Attachment bytes for the pages and the API: downloads and image thumbnails.

Provider file names and claimed MIME types are untrusted: a download is always served as
`application/octet-stream` with `Content-Disposition: attachment`, and a thumbnail is made
anew by Pillow from a decoded raster image (never the stored bytes, never SVG), so nothing
an export holds is ever rendered by the browser as a page.

Decoding untrusted bytes is the worker's job, not a web request's: the first request for a
thumbnail asks for it (an effect the store's jobs turn into a job on the `index` queue) and
is answered "not ready yet"; the job opens only the raster formats drawn here (Pillow tries
no other decoder), refuses an image of more than MAX_PIXELS (Pillow's decompression-bomb
warning is an error), and keeps the PNG, or a note that there is none to make."""

from __future__ import annotations

import io
import logging
import os
import tempfile
import time
import unicodedata
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from PIL import Image, UnidentifiedImageError

from archive.store.blobs import blob_open
from archive.store.effects import on_commit_effect
from archive.store.models import Attachment
from wirecat.errors import Invalid, NotFound

log = logging.getLogger(__name__)

THUMB_SIDE = 320
# Refuse to decode images larger than this many pixels (a "decompression bomb").
MAX_PIXELS = 40_000_000
Image.MAX_IMAGE_PIXELS = MAX_PIXELS
# The only decoders Pillow may use on an attachment: what messengers send as pictures.
# (No TIFF: libtiff's many codecs are the largest decoder surface for little use here.)
RASTER = ("JPEG", "PNG", "GIF", "WEBP", "BMP")
# A thumbnail asked for and not made after this long is asked for again (a lost job).
QUEUED_STALE_SECONDS = 600
# The effect a first request for a thumbnail asks for (archive/store/jobs.py runs it).
THUMBNAIL_WANTED = "store.thumbnail_wanted"


@dataclass(frozen=True)
class Thumbnail:
    """A thumbnail's PNG, or `path=None` while the worker makes it."""

    path: Path | None


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


def _mark(sha256: str, kind: str) -> Path:
    """`queued` (a job was asked for) or `none` (the bytes are no image to draw)."""
    return _thumb_path(sha256).with_suffix(f".{kind}")


def _drawable(attachment: Attachment) -> bool:
    mime = (attachment.mime_type or "").lower()
    return bool(attachment.path and attachment.sha256) and (
        mime.startswith("image/") and not mime.startswith("image/svg")
    )


def _ask_once(mark: Path) -> bool:
    """True when this request is the one to ask for the job (none asked lately)."""
    mark.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        try:
            age = time.time() - mark.stat().st_mtime
        except FileNotFoundError:
            return False  # the job just ended
        if age < QUEUED_STALE_SECONDS:
            return False
        os.utime(mark)
    return True


def attachment_thumbnail(*, public_id: str) -> Thumbnail:
    """The thumbnail of an image attachment: its PNG when the worker has made it, else
    `Thumbnail(None)` after asking for it. NotFound for anything that is no stored image."""
    attachment = attachment_get(public_id=public_id)
    if not _drawable(attachment):
        raise NotFound("no stored image to show")
    target = _thumb_path(attachment.sha256)
    if target.is_file():
        return Thumbnail(target)
    if _mark(attachment.sha256, "none").exists():
        raise NotFound("not an image a thumbnail can be made of")
    if _ask_once(_mark(attachment.sha256, "queued")):
        on_commit_effect(THUMBNAIL_WANTED, public_id=attachment.public_id)
    return Thumbnail(None)


class NotDrawable(Exception):
    pass


def _draw(data: bytes) -> bytes:
    """A PNG of at most THUMB_SIDE pixels a side, drawn from the decoded pixels of `data`.
    NotDrawable for anything but a raster image of RASTER's formats within MAX_PIXELS."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data), formats=RASTER) as image:
                if image.format not in RASTER or image.width * image.height > MAX_PIXELS:
                    raise NotDrawable(f"{image.format} {image.width}x{image.height}")
                image.thumbnail((THUMB_SIDE, THUMB_SIDE))
                converted = image.convert("RGBA" if "A" in image.getbands() else "RGB")
                out = io.BytesIO()
                converted.save(out, format="PNG", optimize=True)
        except NotDrawable:
            raise
        except (UnidentifiedImageError, Image.DecompressionBombError) as exc:
            raise NotDrawable(str(exc)) from exc
        except Exception as exc:  # untrusted bytes: decoders fail in many ways
            raise NotDrawable(f"{type(exc).__name__}: {exc}") from exc
    return out.getvalue()


def thumbnail_make(*, public_id: str) -> Path | None:
    """Make and keep an attachment's thumbnail (the worker's job); None, and a note that
    spares asking again, when its bytes are no image to draw."""
    attachment = attachment_get(public_id=public_id)
    if not attachment.path or not _drawable(attachment):
        raise NotFound("no stored image to show")
    target = _thumb_path(attachment.sha256)
    queued = _mark(attachment.sha256, "queued")
    try:
        if target.is_file():
            return target
        with _blob(attachment.path) as stream:
            data = stream.read(64 << 20)
        try:
            png = _draw(data)
        except NotDrawable as exc:
            log.info("no thumbnail for %s: %s", attachment.public_id, exc)
            _mark(attachment.sha256, "none").parent.mkdir(parents=True, exist_ok=True)
            _mark(attachment.sha256, "none").touch()
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".thumb-", dir=target.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(png)
        os.replace(tmp, target)
        return target
    finally:
        queued.unlink(missing_ok=True)
