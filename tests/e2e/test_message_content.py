"""A message's content in a real browser: formatting, stickers, link cards, media that
plays, file chips, the mail card with its history folded, and revisions as a diff, from
real imports (the project's fixtures and the shared real-export samples), at 1280 and
390 px, light and dark. Screenshots go to tests/artifacts/message-content-*.png."""

from __future__ import annotations

import io
import json
import math
import struct
import wave
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from archive.imports.services import import_job_create, import_run
from archive.store.jobs import thumbnail_make
from archive.store.models import Attachment, Chat
from archive.store.sink import batch_record
from tests.connectors.conftest import sample
from tests.e2e.test_import_page import sign_in
from tests.factories import T0, batch, message

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SIZES = {"1280": {"width": 1280, "height": 900}, "390": {"width": 390, "height": 844}}


def wav(seconds: float = 1.5) -> bytes:
    """A short 440 Hz tone: a voice message any browser plays."""
    out = io.BytesIO()
    with wave.open(out, "wb") as sound:
        sound.setnchannels(1)
        sound.setsampwidth(2)
        sound.setframerate(8000)
        frames = int(8000 * seconds)
        sound.writeframes(
            b"".join(
                struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / 8000)))
                for i in range(frames)
            )
        )
    return out.getvalue()


def picture(path: Path, size: tuple[int, int], colour: tuple[int, int, int], fmt: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", size, colour)
    for x in range(0, size[0], 24):  # stripes, so a thumbnail is visibly a picture
        for y in range(size[1]):
            image.putpixel((x, y), (255, 255, 255))
    image.save(path, format=fmt)


def telegram_with_media(root: Path) -> Path:
    """A Telegram Desktop export whose media were exported: a voice message, a photo, a
    PDF, a sticker, and formatted text of every kind."""
    folder = root / "tg_media"
    (folder / "voice_messages").mkdir(parents=True)
    (folder / "voice_messages" / "audio_1.wav").write_bytes(wav())
    picture(folder / "photos" / "photo_1.jpg", (640, 400), (40, 110, 200), "JPEG")
    picture(folder / "stickers" / "sticker.webp", (256, 256), (250, 180, 40), "WEBP")
    (folder / "files").mkdir()
    (folder / "files" / "Quarterly report.pdf").write_bytes(b"%PDF-1.4\n% a report\n")

    def msg(number: int, sender: str, **fields: Any) -> dict[str, Any]:
        owner = sender == "Me"
        return {
            "id": number,
            "type": "message",
            "date": f"2024-05-0{1 + number // 10}T10:{number:02}:00",
            "date_unixtime": str(1714557600 + number * 60),
            "from": sender,
            "from_id": "user1" if owner else "user2",
            "text": "",
            **fields,
        }

    entities = [
        {"type": "plain", "text": "Release notes: "},
        {"type": "bold", "text": "bold"},
        {"type": "plain", "text": ", "},
        {"type": "italic", "text": "italic"},
        {"type": "plain", "text": ", "},
        {"type": "underline", "text": "underlined"},
        {"type": "plain", "text": ", "},
        {"type": "strikethrough", "text": "struck"},
        {"type": "plain", "text": ", "},
        {"type": "code", "text": "inline code"},
        {"type": "plain", "text": ", a "},
        {"type": "text_link", "text": "link", "href": "https://example.org/notes"},
        {"type": "plain", "text": ", "},
        {"type": "mention", "text": "@wendy"},
        {"type": "plain", "text": " and a "},
        {"type": "spoiler", "text": "secret ending"},
        {"type": "plain", "text": ".\n"},
        {"type": "pre", "text": "def hello():\n    return 'world'", "language": "python"},
        {"type": "plain", "text": "\n"},
        {"type": "blockquote", "text": "A quote from the docs."},
    ]
    messages = [
        msg(1, "Dana", text=entities, text_entities=entities),
        msg(
            2,
            "Dana",
            file="voice_messages/audio_1.wav",
            media_type="voice_message",
            mime_type="audio/wav",
            duration_seconds=1,
        ),
        msg(3, "Me", photo="photos/photo_1.jpg", width=640, height=400, text="The view today"),
        msg(
            4,
            "Dana",
            file="stickers/sticker.webp",
            media_type="sticker",
            sticker_emoji="😺",
            mime_type="image/webp",
        ),
        msg(5, "Me", file="files/Quarterly report.pdf", mime_type="application/pdf"),
        msg(
            6,
            "Dana",
            file="(File not included. Change data exporting settings to download.)",
            file_name="holiday.mp4",
            media_type="video_file",
            mime_type="video/mp4",
            file_size=20_000_000,
        ),
        msg(
            7,
            "Dana",
            poll={
                "question": "Lunch?",
                "closed": False,
                "total_voters": 3,
                "answers": [
                    {"text": "Pizza", "voters": 2, "chosen": True},
                    {"text": "Salad", "voters": 1, "chosen": False},
                ],
            },
        ),
        msg(8, "Me", forwarded_from="Daily Hammer News", text="Nail prices fall again"),
        msg(
            9,
            "Dana",
            location_information={"latitude": 52.52, "longitude": 13.405},
            place_name="Alexanderplatz",
        ),
    ]
    (folder / "result.json").write_text(
        json.dumps({"name": "Dana", "type": "personal_chat", "id": 2, "messages": messages}),
        encoding="utf-8",
    )
    return folder


MAIL = b"""From: Ann Example <ann@example.com>
To: Bob Example <bob@example.com>
Cc: Carol <carol@example.com>
Subject: Re: Lunch on Friday
Date: Tue, 02 Jan 2024 09:30:00 +0000
Message-ID: <reply-1@example.com>
In-Reply-To: <lunch-1@example.com>
References: <lunch-1@example.com>
Content-Type: text/plain; charset=utf-8

Sounds good, see you at the usual place at noon.

Ann

On Mon, 1 Jan 2024 at 10:00, Bob Example <bob@example.com> wrote:
> Lunch on Friday? The usual place, noon.
>
> Bob
"""


def do_import(path: Path, **options: Any) -> None:
    job = import_job_create(source=path, **options)
    import_run(job_id=job.pk)


@pytest.fixture
def imported(tmp_path: Path) -> dict[str, int]:
    """Every format imported for real; chat ids by a short name."""
    do_import(telegram_with_media(tmp_path))
    do_import(FIXTURES / "telegram" / "personal_2020")
    do_import(FIXTURES / "discord" / "guild_general.json")
    do_import(FIXTURES / "whatsapp" / "WhatsApp Chat with Hiking Club.txt")
    do_import(FIXTURES / "slack" / "export")
    mail = tmp_path / "reply.eml"
    mail.write_bytes(MAIL)
    do_import(mail)
    do_import(sample("telegram/tg2md_private_channel_result.json"))
    do_import(sample("discord/dcef_guild_general_with_media.json"))
    do_import(sample("email/spamscope_reply_fwd_with_attachments.eml"))
    do_import(sample("whatsapp/langchain_us_12h_media_omitted.txt"))
    # The worker's job: thumbnails of the stored pictures.
    for attachment in Attachment.objects.filter(path__isnull=False, mime_type__startswith="image/"):
        thumbnail_make(attachment.public_id)

    def chat(**lookup: Any) -> int:
        found = Chat.objects.filter(**lookup).order_by("-message_count").first()
        every = list(Chat.objects.values_list("account__provider", "external_id", "title"))
        assert found is not None, f"no chat {lookup} among {every}"
        return found.pk

    chats = {
        "tg-media": chat(title="Dana"),
        "tg-fixture": chat(title="Bob Builder"),
        "tg-sample": chat(account__provider="telegram", external_id="1292077344"),
        "discord": chat(account__provider="discord", external_id="900000000000000100"),
        "discord-sample": chat(account__provider="discord", external_id="1012224565567721552"),
        "whatsapp": chat(account__provider="whatsapp", title__icontains="Hiking"),
        "whatsapp-sample": chat(account__provider="whatsapp", title__icontains="langchain"),
        "mail": chat(title="Lunch on Friday"),
        "mail-sample": chat(title="Ordine"),
        "slack": chat(account__provider="slack", external_id="C001"),
    }
    return chats


def open_chat(page: Any, live_server: Any, chat_id: int) -> None:
    page.goto(f"{live_server.url}/chats/{chat_id}/")
    page.locator("article.msg").first.wait_for()


def top_screenshot(page: Any, path: Path) -> None:
    """The whole page from its top (a chat opens scrolled to its newest message, and its
    sticky header would sit in the middle of a full-page picture)."""
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(path), full_page=True)


def no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"page is {width} px wide"


def test_formatting_media_and_cards_in_the_browser(
    live_server: Any, page: Any, imported: dict[str, int], artifacts_dir: Path
) -> None:
    sign_in(page, live_server)
    open_chat(page, live_server, imported["tg-media"])
    body = page.locator(".mc .body").first
    assert body.locator("strong").inner_text() == "bold"
    assert body.locator("em").inner_text() == "italic"
    assert body.locator("u").inner_text() == "underlined"
    assert body.locator("s").inner_text() == "struck"
    assert body.locator("pre[data-language=python] code").inner_text().startswith("def hello")
    link = body.get_by_role("link", name="link")
    assert link.get_attribute("href") == "https://example.org/notes"
    assert link.get_attribute("rel") == "noopener nofollow noreferrer"
    assert link.get_attribute("target") == "_blank"

    # A spoiler hides its words until hovered or focused.
    spoiler = body.locator(".spoiler")
    assert spoiler.evaluate("e => getComputedStyle(e).color") == "rgba(0, 0, 0, 0)"
    spoiler.focus()
    # The colour fades in: wait until it is the text's own.
    page.wait_for_function(
        "e => getComputedStyle(e).color === getComputedStyle(e.parentElement).color",
        arg=spoiler.element_handle(),
    )
    assert spoiler.evaluate("e => document.activeElement === e")

    # The voice message plays from the archive's bytes: the browser reads its length.
    audio = page.locator("audio")
    assert audio.count() == 1
    page.wait_for_function(
        "() => { const a = document.querySelector('audio'); "
        "return a.readyState >= 1 && isFinite(a.duration) && a.duration > 1; }"
    )
    # The photo and the sticker are thumbnails the archive drew; the PDF is a chip.
    page.wait_for_function(
        "() => [...document.querySelectorAll('.media-image img')]"
        ".every(i => i.complete && i.naturalWidth > 1)"
    )
    assert page.locator(".media-image img").count() == 2
    assert "😺" in page.locator(".media-sticker").inner_text()
    chip = page.locator(".file-chip", has_text="Quarterly report.pdf")
    assert chip.locator(".file-badge").inner_text() == "PDF"
    missing = page.locator(".file-chip.missing", has_text="holiday.mp4")
    assert "Not stored: not included in the export" in missing.inner_text()
    assert "Pizza" in page.locator(".poll").inner_text()
    assert "Daily Hammer News" in page.locator(".mc-forwarded").inner_text()
    assert (
        page.locator(".place a")
        .get_attribute("href", timeout=1000)
        .startswith("https://www.openstreetmap.org/")
    )

    # Discord: markdown drawn, the embed a card, the sticker named.
    open_chat(page, live_server, imported["discord"])
    assert page.locator(".mc .body strong", has_text="everyone").count() == 1
    assert "CI #42" in page.locator("aside.embed").first.inner_text()
    assert "wave_cat" in page.locator(".sticker").first.inner_text()

    # The real DiscordChatExporter sample: code fence with its language, strike, underline.
    open_chat(page, live_server, imported["discord-sample"])
    assert page.locator("pre[data-language=python]").count() == 1
    assert page.locator(".mc .body s", has_text="HTML").count() == 1
    assert page.locator(".mc .body u", has_text="offline").count() == 1
    assert page.locator(".mc .spoiler", has_text="EZ").count() == 1
    assert "**" not in " ".join(page.locator(".mc .body").all_inner_texts())

    # Mail: the card, the new text first, the history folded until asked for.
    open_chat(page, live_server, imported["mail"])
    card = page.locator(".mc-mail").first
    head = card.locator(".mail-head").inner_text()
    assert "Ann Example <ann@example.com>" in head and "Bob Example" in head
    assert "Carol" in head and "Re: Lunch on Friday" in head
    assert card.locator(".body").first.inner_text().startswith("Sounds good")
    quoted = card.locator(".mail-quoted .quoted")
    assert not quoted.is_visible()
    card.get_by_text("Show quoted text").click()
    quoted.wait_for(state="visible")
    assert "wrote:" in quoted.inner_text()

    # The real Outlook reply (Italian): its forwarded history folded under the new text.
    open_chat(page, live_server, imported["mail-sample"])
    card = page.locator(".mc-mail").first
    assert card.locator(".body").first.inner_text().startswith("Ciao sere")
    assert "Inviato:" not in card.locator(".body").first.inner_text()
    assert card.locator(".mail-quoted").count() == 1


def test_revisions_show_what_changed(live_server: Any, page: Any, artifacts_dir: Path) -> None:
    from datetime import timedelta

    batch_record(batch=batch(message("1", "Meet at five at the old station", minutes=0)))
    batch_record(
        batch=batch(
            message(
                "1",
                "Meet at six at the old station",
                minutes=0,
                edited_at=T0 + timedelta(minutes=5),
            )
        )
    )
    batch_record(
        batch=batch(
            message(
                "1",
                "Meet at six at the new station, bring tickets",
                minutes=0,
                edited_at=T0 + timedelta(minutes=9),
            )
        )
    )
    from archive.store.models import Message

    public_id = Message.objects.get().public_id
    sign_in(page, live_server)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.goto(f"{live_server.url}/m/{public_id}/revisions/")
        steps = page.locator(".revision-step")
        assert steps.count() == 2
        newest = steps.nth(0)
        assert newest.locator("del").first.inner_text() == "old"
        assert newest.locator("ins").first.inner_text() == "new"
        assert "bring tickets" in " ".join(newest.locator("ins").all_inner_texts())
        assert steps.nth(1).locator("del").inner_text() == "five"
        assert steps.nth(1).locator("ins").inner_text() == "six"
        struck = newest.locator("del").first.evaluate("e => getComputedStyle(e).textDecorationLine")
        assert "line-through" in struck
        colours = newest.evaluate(
            "e => [getComputedStyle(e.querySelector('del')).color,"
            " getComputedStyle(e.querySelector('ins')).color]"
        )
        assert colours[0] != colours[1]
        page.screenshot(
            path=str(artifacts_dir / f"message-content-revisions-{scheme}.png"), full_page=True
        )


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["1280", "390"])
def test_screenshots_of_each_format(
    live_server: Any,
    browser: Any,
    imported: dict[str, int],
    artifacts_dir: Path,
    size: str,
    scheme: str,
) -> None:
    context = browser.new_context(viewport=SIZES[size], color_scheme=scheme)
    page = context.new_page()
    try:
        sign_in(page, live_server)
        for name in (
            "tg-media",
            "tg-sample",
            "discord-sample",
            "mail",
            "mail-sample",
            "whatsapp",
            "slack",
        ):
            open_chat(page, live_server, imported[name])
            page.wait_for_function(
                "() => [...document.querySelectorAll('.media-image img')].every(i => i.complete)"
            )
            no_sideways_scroll(page)
            empty = page.evaluate(
                "() => [...document.querySelectorAll('article.msg .content')]"
                ".filter(c => !c.innerText.trim() && !c.querySelector('img,audio,video')).length"
            )
            assert empty == 0, f"{name}: {empty} empty bubbles"
            top_screenshot(page, artifacts_dir / f"message-content-{name}-{size}-{scheme}.png")
    finally:
        context.close()
