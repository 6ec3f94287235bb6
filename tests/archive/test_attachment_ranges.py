"""Players seek in audio and video with `Range` requests: attachment downloads, on the page
and in the API alike, answer one byte range with 206 and only those bytes, a range past the
end with 416, and anything else they do not take (several ranges, a malformed header, an
`If-Range` that is not the ETag they sent) with the whole file."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from django.http import FileResponse
from django.test import Client

from archive.gateway.services.agents import agent_create
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord
from archive.store.models import Attachment
from archive.store.sink import batch_record
from archive.web.files import Unsatisfiable, byte_range
from tests.factories import batch, message

pytestmark = pytest.mark.django_db

SONG = bytes(range(256)) * 4096  # 1 MiB, every byte's position readable from its value
Get = Callable[..., Any]


@pytest.fixture
def song(db: None) -> Attachment:
    blob = blob_put(io.BytesIO(SONG))
    record = AttachmentRecord(
        external_id="a",
        file_name="voice note.ogg",
        mime_type="audio/ogg",
        size=blob.size,
        sha256=blob.sha256,
        blob_path=blob.path,
    )
    batch_record(batch=batch(message("1", "listen", attachments=(record,))))
    return Attachment.objects.get()


@pytest.fixture(params=["page", "api"])
def get(request: pytest.FixtureRequest, song: Attachment, owner_client: Client) -> Get:
    """GET the song's bytes with extra headers, from the page's URL or the API's."""
    auth: dict[str, str] = {}
    if request.param == "page":
        url, client = f"/attachments/{song.public_id}/", owner_client
    else:
        token = agent_create(name="player", scopes=["attachments.read"]).token
        url, client = f"/api/attachments/{song.public_id}", Client()
        auth["Authorization"] = f"Bearer {token}"

    def fetch(**headers: str) -> Any:
        named = {key.replace("_", "-").title(): value for key, value in headers.items()}
        return client.get(url, headers={**auth, **named})

    return fetch


def body(response: Any) -> bytes:
    return b"".join(response.streaming_content)


def untrusted_headers_kept(response: Any, song: Attachment) -> None:
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith('attachment; filename="voice note.ogg"')
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "default-src 'none'; sandbox"
    assert response["Cross-Origin-Resource-Policy"] == "same-origin"
    assert response["X-Content-SHA256"] == song.sha256
    assert response["Accept-Ranges"] == "bytes"


def test_without_a_range_the_whole_file_says_ranges_are_welcome(get: Get, song: Attachment) -> None:
    response = get()
    assert response.status_code == 200
    assert body(response) == SONG
    assert response["Content-Length"] == str(len(SONG))
    assert response["ETag"] == f'"{song.sha256}"'
    assert "Content-Range" not in response
    untrusted_headers_kept(response, song)


@pytest.mark.parametrize(
    ("header", "first", "last"),
    [
        ("bytes=2-5", 2, 5),
        ("bytes=1000-300000", 1000, 300000),  # spans many reads
        ("bytes=1048000-", 1048000, len(SONG) - 1),
        ("bytes=-4", len(SONG) - 4, len(SONG) - 1),
        ("bytes=5-99999999", 5, len(SONG) - 1),  # past the end: up to the end
        ("bytes=0-0", 0, 0),
        ("BYTES = 7 - 9", 7, 9),  # the unit in any case, spaces around
        ("bytes=-5000000", 0, len(SONG) - 1),  # a suffix longer than the file
    ],
)
def test_one_range_is_206_with_only_its_bytes(
    get: Get, song: Attachment, header: str, first: int, last: int
) -> None:
    response = get(range=header)
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes {first}-{last}/{len(SONG)}"
    assert response["Content-Length"] == str(last - first + 1)
    assert body(response) == SONG[first : last + 1]
    untrusted_headers_kept(response, song)


def test_a_range_is_streamed_a_block_at_a_time(get: Get) -> None:
    response = get(range="bytes=10-700009")
    assert response.status_code == 206 and response.streaming
    assert isinstance(response, FileResponse)
    chunks = list(response.streaming_content)  # type: ignore[arg-type]
    assert len(chunks) > 1
    assert max(len(chunk) for chunk in chunks) <= response.block_size
    assert b"".join(chunks) == SONG[10:700010]


@pytest.mark.parametrize("header", [f"bytes={len(SONG)}-", "bytes=99999999-99999999", "bytes=-0"])
def test_a_range_past_the_end_is_416_with_the_size(get: Get, song: Attachment, header: str) -> None:
    response = get(range=header)
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{len(SONG)}"
    assert response["Accept-Ranges"] == "bytes"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]
    assert response["Content-Type"].startswith("application/json")  # the API's error shape
    answer = response.json()
    assert answer["error"] == "RangeNotSatisfiable"
    assert str(len(SONG)) in answer["detail"]


@pytest.mark.parametrize(
    "header",
    [
        "bytes=0-1,4-5",  # several ranges
        "bytes=0-1, 4-5",
        "bytes=abc",
        "bytes=-",
        "bytes=5-2",  # last before first: invalid
        "items=0-1",  # another unit
        "bytes 0-1",
        "bytes=0-1x",
        "bytes=" + "9" * 40 + "-",  # a number no file reaches, malformed here
    ],
)
def test_what_is_not_one_byte_range_gets_the_whole_file(
    get: Get, song: Attachment, header: str
) -> None:
    response = get(range=header)
    assert response.status_code == 200
    assert "Content-Range" not in response
    assert body(response) == SONG
    untrusted_headers_kept(response, song)


def test_if_range_with_the_etag_sent_keeps_the_range(get: Get, song: Attachment) -> None:
    response = get(range="bytes=3-4", if_range=f'"{song.sha256}"')
    assert response.status_code == 206
    assert body(response) == SONG[3:5]


@pytest.mark.parametrize(
    "if_range",
    [
        '"' + "0" * 64 + '"',  # another file's tag: the bytes changed
        "Tue, 01 Dec 2026 10:00:00 GMT",  # a date: no Last-Modified is sent, so never ours
        "W/{etag}",  # a weak tag never matches for If-Range
    ],
)
def test_if_range_naming_anything_else_gets_the_whole_file(
    get: Get, song: Attachment, if_range: str
) -> None:
    response = get(range="bytes=3-4", if_range=if_range.format(etag=f'"{song.sha256}"'))
    assert response.status_code == 200
    assert body(response) == SONG


@pytest.mark.parametrize(
    ("header", "size", "expected"),
    [
        ("bytes=0-", 0, Unsatisfiable),  # an empty file has no first byte
        ("bytes=-3", 0, None),  # a suffix of nothing: the (empty) whole file
        ("bytes=0-", 1, range(0, 1)),
        ("bytes=2-2", 3, range(2, 3)),
        ("bytes=3-3", 3, Unsatisfiable),
        ("", 3, None),
    ],
)
def test_byte_range_edges(header: str, size: int, expected: object) -> None:
    if expected is Unsatisfiable:
        with pytest.raises(Unsatisfiable):
            byte_range(header, size)
    else:
        assert byte_range(header, size) == expected


def test_the_api_schema_documents_partial_and_unsatisfiable_answers(song: Attachment) -> None:
    token = agent_create(name="reader", scopes=["attachments.read"]).token
    spec = Client().get("/api/openapi.json", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    answers = spec["paths"]["/api/attachments/{attachment_id}"]["get"]["responses"]
    assert "application/octet-stream" in answers["206"]["content"]
    assert answers["206"]["headers"]["Content-Range"]["required"] is True
    assert answers["416"]["headers"]["Content-Range"]["schema"]["pattern"] == r"^bytes \*/\d+$"
    assert answers["200"]["headers"]["Accept-Ranges"]["schema"]["enum"] == ["bytes"]
