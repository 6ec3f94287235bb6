"""A chat's export: one zip with the chat's page and its media folder, drawn as the chat
page draws a message (escaped, formatted), every file under a safe unique name, for the
owner only."""

from __future__ import annotations

import re
from urllib.parse import unquote

import pytest
from django.test import Client

from archive.gateway.services.agents import SCOPES, agent_create
from archive.store.chat_export import MediaFolder, export_batches, safe_name
from archive.store.models import Attachment, Chat, Message
from archive.store.sink import batch_record
from tests.chat_export.support import HOSTILE_NAMES, download, hostile_chat
from tests.factories import batch, message

pytestmark = pytest.mark.django_db

PAGE = "Chat chat-1.html"


def page_of(client: Client, chat: Chat) -> tuple[str, dict[str, bytes]]:
    with download(client, chat) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    return files.pop(PAGE).decode(), files


def test_the_zip_holds_the_page_and_every_stored_file_it_links_to(owner_client: Client) -> None:
    chat = hostile_chat()
    html, files = page_of(owner_client, chat)
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert all(name.startswith("media/") for name in files)
    linked = {unquote(href) for href in re.findall(r'(?:href|src)="(media/[^"]+)"', html)}
    assert linked == set(files)  # every link has its file, every file a link
    stored = {a.file_name: a for a in Attachment.objects.exclude(path=None)}
    assert len(files) == len(stored)  # the one never stored is named, not packed
    assert files["media/red.png"].startswith(b"\x89PNG")
    assert '<img src="media/red.png"' in html  # a picture is shown, not only linked
    assert "left-out.mp4" in html and "Not in this export" in html
    # Self-contained: no script, nothing fetched from elsewhere.
    assert "<script" not in html.lower()
    assert not re.search(r'(?:src|href)="(?!media/|#|https?://|mailto:)', html)
    assert not re.search(r'src="https?:', html)
    assert "Content-Security-Policy" in html and "prefers-color-scheme: dark" in html


def test_hostile_text_is_shown_as_text(owner_client: Client) -> None:
    html, _ = page_of(owner_client, hostile_chat())
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert" not in html


def test_hostile_file_names_become_safe_unique_names_in_media(owner_client: Client) -> None:
    _, files = page_of(owner_client, hostile_chat())
    names = [name.removeprefix("media/") for name in files]
    assert len({n.casefold() for n in names}) == len(names)
    for name in names:
        assert "/" not in name and "\\" not in name and not name.startswith(".")
        assert not re.match(r"(?i)^(con|prn|aux|nul|com\d|lpt\d)(\.|$)", name)
        assert len(name.encode()) <= 120 and not re.search(r'[\x00-\x1f<>:"|?*]', name)
    assert "passwd" in names and "_con" in names and "_CON.txt" in names
    assert "отчёт 2024 ✓.pdf" in names  # unicode kept
    assert {"photo.png", "PHOTO (2).png"} <= set(names)  # same name, other bytes
    long = next(n for n in names if n.startswith("xxx"))
    assert long.endswith(".pdf")  # cut short, its extension kept
    assert files["media/passwd"] == b"bytes of file 0"
    assert len(names) == len(HOSTILE_NAMES) + 1  # and the picture


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ("../../etc/passwd", "passwd"),
        ("..", "file"),
        ("nul.tar.gz", "_nul.tar.gz"),
        ("COM1", "_COM1"),
        ("  spaced   out .txt. ", "spaced out .txt"),
        ("tab\tand\nnewline.txt", "tab and newline.txt"),
        ("C:\\Users\\me\\evil.exe", "evil.exe"),
        ("", "file"),
    ],
)
def test_safe_names(raw: str, safe: str) -> None:
    assert safe_name(raw, fallback="file") == safe


def test_edits_deletions_and_replies_are_shown(owner_client: Client) -> None:
    chat = hostile_chat()
    html, _ = page_of(owner_client, chat)
    first = Message.objects.get(external_id="1")
    reply = re.search(r'<a class="quote" href="#m-([^"]+)">(.*?)</a>', html, re.S)
    assert reply is not None and reply[1] == first.public_id
    assert f'id="m-{first.public_id}"' in html  # the quote jumps to it within the page
    assert "Alice" in reply[2] and "&lt;script&gt;" in reply[2]
    edited = article(html, "second words")
    assert ">edited</span>" in edited and "first words" in edited  # its earlier version kept
    deleted = article(html, "gone soon")
    assert "msg in start deleted" in deleted and 'class="badge deleted"' in deleted
    assert [day for day in re.findall(r'<div class="day"><span>([^<]+)<', html)] == [
        "1 March 2024",
        "2 March 2024",
    ]


def article(html: str, text: str) -> str:
    found = [a for a in re.findall(r"<article.*?</article>", html, re.S) if text in a]
    assert len(found) == 1, text
    return found[0]


def test_days_and_runs_continue_across_batches(db: None) -> None:
    batch_record(
        batch=batch(
            *[
                message(
                    str(i),
                    f"line {i}",
                    minutes=i * 3 + (60 * 24 if i >= 7 else 0),
                    sender="bob" if i in (3, 4, 9) else "alice",
                )
                for i in range(12)
            ]
        )
    )
    chat = Chat.objects.get()

    def layout(size: int) -> list[tuple[str, bool, str]]:
        return [
            (row.message.text, row.run_start, row.day_label)
            for part in export_batches(chat=chat, media=MediaFolder(), size=size)
            for row in part.rows
        ]

    whole = layout(500)
    assert len(whole) == 12 and whole[0][2] == "1 March 2024" and whole[7][2] == "2 March 2024"
    starts = [i for i, (_, run, _) in enumerate(whole) if run]
    assert starts == [0, 3, 5, 7, 9, 10]  # a new sender, a new day
    assert layout(2) == whole and layout(5) == whole


def test_only_the_owners_session_can_download_it(client: Client, owner_client: Client) -> None:
    chat = hostile_chat()
    url = f"/chats/{chat.pk}/export/"
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "/login" in anonymous["Location"]
    token = agent_create(name="reader", scopes=sorted(SCOPES)).token
    agent = client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert agent.status_code == 302 and "/login" in agent["Location"]
    missing = owner_client.get("/chats/999999/export/")
    assert missing.status_code == 404 and b"does not exist" in missing.content
    assert owner_client.post(url).status_code == 405


def test_the_chat_page_offers_the_export(owner_client: Client) -> None:
    chat = hostile_chat()
    html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert f'href="/chats/{chat.pk}/export/"' in html and "Export this chat" in html
    assert "wirecat export_chat" not in html  # a short chat downloads in time
    Chat.objects.filter(pk=chat.pk).update(message_count=50_000)
    long = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert f"wirecat export_chat {chat.pk} FOLDER" in long


def test_the_download_is_named_after_the_chat(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "hi")))
    chat = Chat.objects.get()
    chat_title = 'Q3 / plans: "draft" ✓'
    Chat.objects.filter(pk=chat.pk).update(title=chat_title)
    response = owner_client.get(f"/chats/{chat.pk}/export/")
    disposition = response["Content-Disposition"]
    assert disposition.startswith("attachment;") and "Q3 _ plans_ _draft_" in unquote(disposition)
    assert response["Cache-Control"] == "private, no-store"
    b"".join(response.streaming_content)  # type: ignore[attr-defined]


def test_many_files_of_one_name_are_numbered_in_order() -> None:
    folder = MediaFolder()
    names = [folder._unique("photo.jpg") for _ in range(3000)]
    assert names[:3] == ["photo.jpg", "photo (2).jpg", "photo (3).jpg"]
    assert names[-1] == "photo (3000).jpg" and len(set(names)) == 3000
    assert folder._unique("PHOTO (2).JPG") == "PHOTO (2) (2).JPG"


def test_what_a_message_holds_besides_text_is_drawn_as_on_the_chat_page(
    owner_client: Client,
) -> None:
    batch_record(
        batch=batch(
            message("1", "**not bold here**", metadata={"forwarded_from": "News <b>Desk</b>"}),
            message("2", "", minutes=1),
        )
    )
    html, _ = page_of(owner_client, Chat.objects.get())
    forwarded = article(html, "Forwarded from")
    assert "<strong>News &lt;b&gt;Desk&lt;/b&gt;</strong>" in forwarded
    assert "**not bold here**" in forwarded  # a plain provider's text stays as written
    assert "No text or media was kept for this message." in html
