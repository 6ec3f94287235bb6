"""Bytes an export brought in, sent the one way for the pages and the API alike.

Provider file names and claimed MIME types are untrusted: every answer carrying them is a
download (`application/octet-stream`, `Content-Disposition: attachment`) with headers that
keep a browser from sniffing, rendering or embedding it elsewhere, whichever route sent it.

Range requests (RFC 9110 §14), so that a player can seek in audio and video: one range
`bytes=a-b`, `bytes=a-` or `bytes=-n` is answered 206 with only those bytes (read from the
file as they are sent); a range past the end 416 with `Content-Range: bytes */size`; a
malformed header, another unit or several ranges are ignored (the whole file, 200), as the
RFC allows. `If-Range` is honoured strictly: the range is served only when it names the
`ETag` sent (the bytes' SHA-256); any other value — a date (no `Last-Modified` is sent), a
weak or stale tag — gets the whole file.
"""

from __future__ import annotations

import functools
import io
import os
import re
from typing import BinaryIO, Final, TypeVar

from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from PIL import Image

from archive.store.services.attachments import Download, Thumbnail

UNTRUSTED: Final = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cross-Origin-Resource-Policy": "same-origin",
}


Response = TypeVar("Response", bound=HttpResponseBase)


def _untrusted(response: Response) -> Response:
    for header, value in UNTRUSTED.items():
        response[header] = value
    return response


class Unsatisfiable(Exception):
    """A range that starts past the end of the file (or an empty suffix)."""


# One range of one unit, nothing else; its numbers at most 30 digits (a longer one is
# malformed, so ignored).
_RANGE = re.compile(r"\s*([A-Za-z]+)\s*=\s*(\d{0,30})\s*-\s*(\d{0,30})\s*")


def byte_range(header: str, size: int) -> range | None:
    """The bytes a `Range` header asks for, within a file of `size` bytes; None when the
    whole file is to be sent (no header, another unit, several ranges, a malformed one, a
    suffix of an empty file). Unsatisfiable when the range starts past the end."""
    found = _RANGE.fullmatch(header)
    if found is None or found[1].lower() != "bytes":
        return None
    first, last = found[2], found[3]
    if not first:
        if not last:
            return None  # "bytes=-"
        suffix = int(last)
        if suffix == 0:
            raise Unsatisfiable
        return range(max(0, size - suffix), size) if size else None
    start = int(first)
    if last and int(last) < start:
        return None  # invalid: ignored
    if start >= size:
        raise Unsatisfiable
    end = min(int(last), size - 1) if last else size - 1
    return range(start, end + 1)


class _Slice:
    """`length` bytes of an open file from `start`, read as they are sent. No `seek`,
    `tell` or `fileno`: neither Django nor a server's sendfile may see past the slice."""

    def __init__(self, handle: BinaryIO, start: int, length: int) -> None:
        handle.seek(start)
        self._handle = handle
        self._left = length

    def read(self, size: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        data = self._handle.read(self._left if size < 0 else min(size, self._left))
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._handle.close()


def _wanted(request: HttpRequest, etag: str, size: int) -> range | None:
    """The range the request asks for, if it is to be honoured (see the module's notes)."""
    header = request.headers.get("Range")
    if not header:
        return None
    if_range = request.headers.get("If-Range")
    if if_range is not None and (not etag or if_range.strip() != etag):
        return None
    return byte_range(header, size)


# Audio and video a browser plays itself when opened (`?play=1` on the page's address): a
# link to a position (`…?play=1#t=65`) then plays from there, no script needed. Only these
# types, only media: nothing here can run script, and the sandbox CSP still applies.
PLAYABLE: Final = frozenset(
    {
        "audio/mpeg", "audio/mp4", "audio/aac", "audio/ogg", "audio/opus", "audio/wav",
        "audio/x-wav", "audio/webm", "audio/flac", "video/mp4", "video/webm", "video/ogg",
    }
)  # fmt: skip


def attachment_response(
    request: HttpRequest, download: Download, *, play: bool = False
) -> HttpResponseBase:
    """An attachment's stored bytes as a download, with their SHA-256 in `X-Content-SHA256`
    (and as the ETag); one byte range of them when the request asks (206), 416 when the
    range lies past the end. NotFound when the bytes are not on disk. With `play`, audio
    and video of a PLAYABLE type are sent as themselves, inline, for the browser's player."""
    mime = (download.attachment.mime_type or "").lower()
    inline = play and mime in PLAYABLE
    handle = download.open()
    sha256 = download.attachment.sha256
    etag = f'"{sha256}"' if sha256 else ""
    response: HttpResponseBase
    try:
        size = os.fstat(handle.fileno()).st_size
        wanted = _wanted(request, etag, size)
    except Unsatisfiable:
        handle.close()
        response = JsonResponse(
            {
                "error": "RangeNotSatisfiable",
                "detail": f"Range: {request.headers.get('Range')}: the file has {size} bytes",
            },
            status=416,
        )
        response["Content-Range"] = f"bytes */{size}"
    except BaseException:
        handle.close()
        raise
    else:
        body: BinaryIO | _Slice = handle
        if wanted is not None:
            body = _Slice(handle, wanted.start, len(wanted))
        response = FileResponse(
            body,
            as_attachment=not inline,
            filename=download.name,
            content_type=mime if inline else "application/octet-stream",
            status=200 if wanted is None else 206,
        )
        if wanted is not None:
            response["Content-Length"] = str(len(wanted))
            response["Content-Range"] = f"bytes {wanted.start}-{wanted.stop - 1}/{size}"
        response["X-Content-SHA256"] = sha256
        if etag:
            response["ETag"] = etag
    response["Accept-Ranges"] = "bytes"
    return _untrusted(response)


@functools.cache
def _placeholder() -> bytes:
    """One transparent pixel: what an image shows while the worker makes its thumbnail."""
    out = io.BytesIO()
    Image.new("RGBA", (1, 1), (0, 0, 0, 0)).save(out, format="PNG")
    return out.getvalue()


def thumbnail_response(thumbnail: Thumbnail) -> HttpResponseBase:
    """A thumbnail WireCat made itself (a PNG), kept by the browser for a day; while the
    worker makes it, a one-pixel placeholder no one keeps (wirecat.js asks again)."""
    if thumbnail.path is None:
        pending = HttpResponse(_placeholder(), content_type="image/png")
        pending["Cache-Control"] = "no-store"
        pending["Retry-After"] = "2"
        return _untrusted(pending)
    response = FileResponse(thumbnail.path.open("rb"), content_type="image/png")
    response["Cache-Control"] = "private, max-age=86400"
    return _untrusted(response)
