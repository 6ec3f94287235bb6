"""Bytes an export brought in, sent the one way for the pages and the API alike.

Provider file names and claimed MIME types are untrusted: every answer carrying them is a
download (`application/octet-stream`, `Content-Disposition: attachment`) with headers that
keep a browser from sniffing, rendering or embedding it elsewhere, whichever route sent it.
"""

from __future__ import annotations

import functools
import io
from typing import Final, TypeVar

from django.http import FileResponse, HttpResponse, HttpResponseBase
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


def attachment_response(download: Download) -> FileResponse:
    """An attachment's stored bytes as a download, with their SHA-256 in
    `X-Content-SHA256`. NotFound when the bytes are not on disk."""
    response = FileResponse(
        download.open(),
        as_attachment=True,
        filename=download.name,
        content_type="application/octet-stream",
    )
    response["X-Content-SHA256"] = download.attachment.sha256
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
