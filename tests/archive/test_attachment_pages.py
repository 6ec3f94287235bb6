"""Reading a chat: attachment downloads (always as downloads, never rendered), thumbnails
made anew from decoded images, earlier versions of edited messages on demand."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.test import Client
from PIL import Image

from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord
from archive.store.jobs import thumbnail_make
from archive.store.models import Attachment, Chat, Message
from archive.store.sink import batch_record
from tests.factories import T0, batch, message

pytestmark = pytest.mark.django_db


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def stored(name: str, data: bytes, mime: str, key: str) -> AttachmentRecord:
    blob = blob_put(io.BytesIO(data))
    return AttachmentRecord(
        external_id=key,
        file_name=name,
        mime_type=mime,
        size=blob.size,
        sha256=blob.sha256,
        blob_path=blob.path,
    )


@pytest.fixture
def attachments(db: None) -> dict[str, Attachment]:
    batch_record(
        batch=batch(
            message(
                "1",
                "files",
                attachments=(
                    stored('../../etc/pa"ss\r\nX-Evil: 1.txt', b"hello bytes", "text/plain", "t"),
                    stored("photo.png", png(1200, 600), "image/png", "p"),
                    stored(
                        "page.png",
                        b"<html><script>alert(1)</script></html>",
                        "image/png",
                        "h",
                    ),
                    stored(
                        "vector.svg",
                        b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
                        "image/svg+xml",
                        "s",
                    ),
                    AttachmentRecord(external_id="m", file_name="missing.pdf", mime_type="x"),
                ),
            )
        )
    )
    return {a.external_id: a for a in Attachment.objects.all()}


def test_downloads_are_attachments_with_safe_names_and_headers(
    owner_client: Client, attachments: dict[str, Attachment]
) -> None:
    text = attachments["t"]
    response = owner_client.get(f"/attachments/{text.public_id}/")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"hello bytes"  # type: ignore[attr-defined]
    assert response["Content-Type"] == "application/octet-stream"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]
    assert response["X-Content-SHA256"] == text.sha256
    disposition = response["Content-Disposition"]
    assert disposition.startswith("attachment;")
    assert "\r" not in disposition and "\n" not in disposition and "/" not in disposition
    assert "X-Evil" not in response.headers or response.headers.get("X-Evil") is None
    html = owner_client.get(f"/attachments/{attachments['h'].public_id}/")
    assert html["Content-Type"] == "application/octet-stream"  # never text/html or image/png


def test_a_file_the_export_left_out_is_explained(
    owner_client: Client, attachments: dict[str, Attachment]
) -> None:
    response = owner_client.get(f"/attachments/{attachments['m'].public_id}/")
    assert response.status_code == 404
    assert "did not include this file" in response.content.decode()
    assert owner_client.get("/attachments/att_nope/").status_code == 404


def test_thumbnails_are_made_from_decoded_images_only(
    owner_client: Client, attachments: dict[str, Attachment]
) -> None:
    # The worker decodes images, not the web request: the first answer is a placeholder
    # that no one keeps, and the request only asked for the job.
    for key in ("p", "h"):
        first = owner_client.get(f"/attachments/{attachments[key].public_id}/thumbnail/")
        assert first.status_code == 200 and first["Cache-Control"] == "no-store", key
        assert Image.open(io.BytesIO(first.content)).size == (1, 1)
        thumbnail_make(attachments[key].public_id)  # what the worker runs
    response = owner_client.get(f"/attachments/{attachments['p'].public_id}/thumbnail/")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "max-age" in response["Cache-Control"]
    thumb = Image.open(io.BytesIO(b"".join(response.streaming_content)))  # type: ignore[attr-defined]
    assert thumb.format == "PNG" and max(thumb.size) == 320
    for key in ("h", "s", "t", "m"):  # HTML claiming to be PNG, SVG, text, not stored
        refused = owner_client.get(f"/attachments/{attachments[key].public_id}/thumbnail/")
        assert refused.status_code == 404, key


def test_chat_page_links_downloads_and_shows_thumbnails(
    owner_client: Client, attachments: dict[str, Attachment]
) -> None:
    html = owner_client.get(f"/chats/{Chat.objects.get().pk}/").content.decode()
    assert f"/attachments/{attachments['p'].public_id}/thumbnail/" in html
    assert f"/attachments/{attachments['s'].public_id}/thumbnail/" not in html  # SVG: no
    assert f'href="/attachments/{attachments["t"].public_id}/"' in html
    assert "missing.pdf" in html and "not stored" in html
    assert "<script>" not in html


@pytest.mark.parametrize("url", ["/attachments/att_x/", "/attachments/att_x/thumbnail/"])
def test_attachment_urls_need_the_owner(client: Client, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 302 and "/login" in response["Location"]


def test_edited_messages_show_earlier_versions_on_demand(owner_client: Client, db: None) -> None:
    batch_record(batch=batch(message("1", "first text", minutes=0)))
    batch_record(
        batch=batch(message("1", "second text", minutes=0, edited_at=T0 + timedelta(hours=1)))
    )
    msg = Message.objects.get()
    page = owner_client.get(f"/chats/{msg.chat_id}/").content.decode()
    assert f'hx-get="/m/{msg.public_id}/revisions/"' in page and "first text" not in page
    fragment = owner_client.get(f"/m/{msg.public_id}/revisions/", HTTP_HX_REQUEST="true")
    body = fragment.content.decode()
    assert "first text" in body and "second text" in body and "<html" not in body
    full = owner_client.get(f"/m/{msg.public_id}/revisions/").content.decode()
    assert "<html" in full and "first text" in full
    assert owner_client.get("/m/msg_nope/revisions/").status_code == 404
