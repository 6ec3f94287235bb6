"""Bytes an export brought in, sent the one way for the pages and the API alike.

Provider file names and claimed MIME types are untrusted: every answer carrying them is a
download (`application/octet-stream`, `Content-Disposition: attachment`) with headers that
keep a browser from sniffing, rendering or embedding it elsewhere, whichever route sent it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from django.http import FileResponse

from archive.store.services.attachments import Download

UNTRUSTED: Final = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def _untrusted(response: FileResponse) -> FileResponse:
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


def thumbnail_response(path: Path) -> FileResponse:
    """A thumbnail WireCat made itself (a PNG), kept by the browser for a day."""
    response = FileResponse(path.open("rb"), content_type="image/png")
    response["Cache-Control"] = "private, max-age=86400"
    return _untrusted(response)
