"""A message's content as a messenger shows it: formatting from what the store holds
(Telegram entities, Discord markdown, Slack/WhatsApp marks), stickers and link cards, media,
the mail card with its quoted history folded, and revisions as a word diff."""

from __future__ import annotations

import dataclasses
import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import connection
from django.template import Context, Template
from django.test import Client
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st

from archive.connectors.registry import text_markup
from archive.imports.services import import_job_create, import_run
from archive.store import rendering
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from archive.web.formatting import MAX_FORMATTED, message_html
from tests.factories import ACCOUNT, T0, batch, message

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def md(text: str, **metadata: Any) -> str:
    return str(message_html(text, markup="markdown", metadata=metadata))


def tg(entities: list[Any], text: str | None = None) -> str:
    """Telegram text drawn from its entities, as the connector stores them (fragments
    as {"type", "text"}; plain strings become {"type": "plain"})."""
    stored = [{"type": "plain", "text": e} if isinstance(e, str) else e for e in entities]
    if text is None:
        text = "".join(e.get("text", "") for e in stored)
    return str(message_html(text, markup="entities", metadata={"entities": stored}))


def assert_safe(html: str) -> None:
    """Nothing in `html` runs or leaves the allow-list: every tag is an allowed one, and
    its attributes are neither handlers nor links to anything but the web and mail."""
    allowed = {"p", "br", "strong", "em", "u", "s", "del", "code", "pre", "blockquote"}
    allowed |= {"a", "span", "ul", "ol", "li", "h1", "h2", "h3"}
    for tag in re.findall(r"<(/?)([a-zA-Z][^\s/>]*)([^>]*)>", html):
        assert tag[1].lower() in allowed, tag
        attributes = tag[2]
        assert not re.search(r"\son[a-z]+\s*=", attributes, re.IGNORECASE), tag
        assert "style=" not in attributes.lower(), tag
    for href in re.findall(r'href="([^"]*)"', html):
        assert href.startswith(("http://", "https://", "mailto:")), href


# --- which markup a provider writes ---------------------------------------------------------


def test_each_provider_names_its_markup_and_unknown_ones_are_plain() -> None:
    assert text_markup("telegram") == "entities"
    assert text_markup("discord") == "markdown"
    assert text_markup("slack") == text_markup("whatsapp") == "mrkdwn"
    assert text_markup("mail") == text_markup("testnet") == "plain"


def test_plain_text_is_escaped_with_safe_links_and_no_formatting() -> None:
    html = str(
        message_html("**not bold** <b>x</b> https://a.example/?q=1&r=2\nline", markup="plain")
    )
    assert "**not bold**" in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert '<a href="https://a.example/?q=1&amp;r=2" rel="noopener nofollow noreferrer"' in html
    assert "<br>" in html


# --- Telegram entities --------------------------------------------------------------------


def test_telegram_export_fragments_keep_their_formatting() -> None:
    html = tg(
        [
            {"type": "bold", "text": "bold"},
            " ",
            {"type": "italic", "text": "it"},
            {"type": "underline", "text": "under"},
            {"type": "strikethrough", "text": "struck"},
            {"type": "code", "text": "a<b"},
            {"type": "pre", "text": "print('hi')\nx = 1", "language": "python"},
            {"type": "text_link", "text": "the docs", "href": "https://docs.example.org/"},
            {"type": "link", "text": "example.org/path"},
            {"type": "email", "text": "bob@example.org"},
            {"type": "mention", "text": "@wendy"},
            {"type": "spoiler", "text": "secret"},
            {"type": "blockquote", "text": "quoted\nlines"},
            {"type": "hashtag", "text": "#tag"},
        ]
    )
    for fragment in (
        "<strong>bold</strong>",
        "<em>it</em>",
        "<u>under</u>",
        "<s>struck</s>",
        "<code>a&lt;b</code>",
        "<pre data-language=\"python\"><code>print('hi')\nx = 1</code></pre>",
        '<span class="mention">@wendy</span>',
        '<span class="spoiler" tabindex="0">secret</span>',
        "<blockquote>quoted<br>\nlines</blockquote>",
        "#tag",
    ):
        assert fragment in html, fragment
    assert re.search(
        r'<a href="https://docs\.example\.org/"[^>]*target="_blank"[^>]*>the docs</a>', html
    )
    assert 'href="https://example.org/path"' in html
    assert 'href="mailto:bob@example.org"' in html
    assert 'rel="noopener nofollow noreferrer"' in html
    assert_safe(html)


@pytest.mark.parametrize(
    "href",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,<script>x</script>",
        "/admin/",
        "vbscript:x",
    ],
)
def test_a_telegram_link_to_anything_but_the_web_is_plain_text(href: str) -> None:
    html = tg([{"type": "text_link", "text": "click me", "href": href}])
    assert "click me" in html and "<a" not in html
    assert_safe(html)


def test_telegram_fragment_text_is_escaped() -> None:
    html = tg(
        [{"type": "bold", "text": "<script>alert(1)</script>"}, '<img src=x onerror="alert(2)">']
    )
    assert "<strong>&lt;script&gt;alert(1)&lt;/script&gt;</strong>" in html
    assert "&lt;img src=x onerror=" in html
    assert_safe(html)


def test_telegram_line_breaks_at_blocks_and_fragment_edges_are_not_doubled() -> None:
    # As a real export writes them: a code span ending in blank lines before a block.
    html = tg(
        [
            {"type": "code", "text": "mono\n\n"},
            {"type": "pre", "text": "a\nb", "language": ""},
            "\n",
            {"type": "blockquote", "text": "q"},
            "\nafter",
        ]
    )
    assert (
        html == "<code>mono</code><br>\n<pre><code>a\nb</code></pre><blockquote>q</blockquote>after"
    )


def test_bot_api_entities_count_utf16_and_nest() -> None:
    # 👋 is two UTF-16 code units: offsets after it are one more than Python's.
    text = "Hello 👋 bold italic link"
    html = tg(
        [
            {"type": "bold", "offset": 9, "length": 11},
            {"type": "italic", "offset": 14, "length": 6},
            {"type": "text_link", "offset": 21, "length": 4, "url": "https://x.example/"},
        ],
        text,
    )
    assert "Hello 👋 <strong>bold <em>italic</em></strong> " in html
    assert re.search(r'<a href="https://x\.example/"[^>]*>link</a>', html)


def test_bot_api_entities_that_cross_or_overflow_do_not_break_the_text() -> None:
    text = "abcdef"
    html = tg(
        [
            {"type": "bold", "offset": 0, "length": 4},
            {"type": "italic", "offset": 2, "length": 3},  # crosses bold's end: dropped
            {"type": "code", "offset": 5, "length": 900},  # past the end: cut
            {"type": "underline", "offset": -3, "length": 2},  # before the start: nothing
        ],
        text,
    )
    assert re.sub(r"<[^>]+>", "", html) == text
    assert "<strong>abcd</strong>" in html and "<code>f</code>" in html


def test_entity_names_without_offsets_leave_the_text_plain() -> None:
    # Telethon's live connector keeps only the entities' class names.
    html = str(
        message_html(
            "*still* plain", markup="entities", metadata={"entities": ["MessageEntityBold"]}
        )
    )
    assert html == "*still* plain"


def test_telegram_fixture_formatting_reaches_the_chat_page(owner_client: Client) -> None:
    job = import_job_create(source=FIXTURES / "telegram" / "personal_2020")
    import_run(job_id=job.pk)
    chat = Chat.objects.get(title="Bob Builder")
    html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert "<strong>here</strong>" in html and "<code>make all</code>" in html
    assert "<em>slanted</em>" in html and "<u>under</u>" in html and "<s>struck</s>" in html
    assert '<pre data-language="python">' in html
    assert re.search(r'<a href="https://docs\.example\.org/start"[^>]*>the docs</a>', html)
    # The sticker whose file the export left out: its emoji, labelled, not an empty bubble.
    assert re.search(
        r'<span class="sticker-face">👍</span>\s*<span class="sticker-label">sticker', html
    )
    # The animation the export left out: a chip that says so.
    assert "Not stored: not included in the export" in html


# --- Discord markdown -------------------------------------------------------------------


def test_discord_markdown_is_drawn() -> None:
    html = md(
        "**bold** *it* _it2_ __under__ ~~gone~~ `x<y` ||hidden|| [docs](https://d.example/) "
        "https://bare.example/p?a=1. <@111> <@!222> <#333> <:kekw:444>",
        mentions=[{"id": "111", "name": "ada", "nickname": "Ada L."}, {"id": "222", "name": "bob"}],
    )
    for fragment in (
        "<strong>bold</strong>",
        "<em>it</em>",
        "<em>it2</em>",
        "<u>under</u>",
        "<s>gone</s>",
        "<code>x&lt;y</code>",
        '<span class="spoiler" tabindex="0">hidden</span>',
        '<span class="mention">@Ada L.</span>',
        '<span class="mention">@bob</span>',
        '<span class="mention">#channel</span>',
        ":kekw:",
    ):
        assert fragment in html, fragment
    assert re.search(
        r'<a href="https://d\.example/" title="https://d\.example/"[^>]*>docs</a>', html
    )
    assert re.search(
        r'<a href="https://bare\.example/p\?a=1"[^>]*>https://bare\.example/p\?a=1</a>\.', html
    )
    assert_safe(html)


def test_discord_code_fences_keep_their_language_and_are_not_formatted() -> None:
    html = md('say:\n```python\ndef main():\n    print("**hi**") # <b>\n```\nafter')
    assert re.search(
        r'<pre data-language="python"><code>def main\(\):\n    '
        r'print\((&quot;|")\*\*hi\*\*(&quot;|")\) # &lt;b&gt;</code></pre>',
        html,
    )
    assert "<strong>" not in html and "after" in html


def test_discord_quotes_one_line_and_the_rest() -> None:
    html = md("> quoted\nnot quoted")
    assert re.search(r"<blockquote>\s*<p>quoted</p>\s*</blockquote>", html)
    assert "<p>not quoted</p>" in html
    html = md("> > not nested")  # Discord never nests quotes
    assert html.count("<blockquote>") == 1 and "&gt; not nested" in html
    html = md("intro\n>>> all\nof this")
    assert re.search(r"<blockquote>\s*<p>all<br>\s*of this</p>\s*</blockquote>", html)


def test_discord_has_no_images_indented_code_or_setext_headings() -> None:
    html = md("![pic](https://evil.example/track.png)\n\n    not code\n\ntitle\n---")
    assert "<img" not in html and "<pre" not in html and "<h2" not in html and "<hr" not in html
    assert "not code" in html


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        "[click](javascript:alert(1))",
        "[click](JAVASCRIPT:alert(1))",
        "[click](  javascript:alert(1))",
        "[click](data:text/html;base64,PHNjcmlwdD4=)",
        "[click](vbscript:msgbox)",
        "<javascript:alert(1)>",
        '<img src=x onerror="alert(1)">',
        "<a href='javascript:alert(1)'>x</a>",
        '[x](https://ok.example/" onmouseover="alert(1))',
        "<iframe src=https://evil.example></iframe>",
        "```\n</code></pre><script>alert(1)</script>\n```",
        "`</code><script>alert(1)</script>`",
        "||<script>alert(1)</script>||",
        "<@1><script>",
        "[x](/relative/admin)",
    ],
)
def test_discord_hostile_input_stays_text(hostile: str) -> None:
    html = md(hostile)
    assert_safe(html)


@pytest.mark.parametrize(
    "text",
    [
        "**open bold",
        "*a **b* c**",
        "***both***",
        "__*mixed*__",
        "||spoiler **bold|| text**",
        "~~strike *and ~~ italic*",
        "[unclosed link(https://x.example",
        "`unclosed code",
        "```\nunclosed fence",
        "||",
        "||||",
        "> " * 200 + "deep",
        "[" * 500 + "]" * 500,
        "*" * 3000,
        "_" * 3000 + "x",
    ],
)
def test_discord_unbalanced_and_nested_markup_keeps_every_word(text: str) -> None:
    html = md(text)
    assert_safe(html)
    words = re.findall(r"[a-z]+", text)
    shown = re.sub(r"<[^>]+>", "", html)
    for word in words:
        assert word in shown


def test_huge_input_is_bounded_but_whole() -> None:
    tail_marker = "**past the cap**"
    text = (
        ("*a **b ||c [d](https://e.example) " * 2000)[: MAX_FORMATTED - 5] + "x" * 10 + tail_marker
    )
    assert len(text) > MAX_FORMATTED
    html = md(text)
    assert_safe(html)
    # Past MAX_FORMATTED the text is shown as it is, unformatted: nothing is lost.
    assert tail_marker in html
    big = "line\n" * 100_000
    assert str(message_html(big, markup="markdown")).count("line") == 100_000


@given(st.text(alphabet="*_~`|[]()<>@#:!\\>\n abc/h.tps", max_size=120))
def test_any_markdown_is_safe(text: str) -> None:
    assert_safe(md(text))
    assert_safe(str(message_html(text, markup="mrkdwn")))


def test_discord_fixture_embed_sticker_and_markdown_reach_the_chat_page(
    owner_client: Client,
) -> None:
    job = import_job_create(source=FIXTURES / "discord" / "guild_general.json")
    import_run(job_id=job.pk)
    chat = Chat.objects.get()
    html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert "Hello <strong>everyone</strong>" in html
    assert re.search(r'<aside class="embed"[^>]*>.*CI #42.*All green', html, re.DOTALL)
    assert 'href="https://ci.example.com/42"' in html
    assert re.search(
        r'<span class="sticker-tile">wave_cat</span> <span class="sticker-label">sticker</span>',
        html,
    )
    bodies = re.findall(r'<div class="body">(.*?)</div>', html, re.DOTALL)
    assert bodies and not any("**" in body for body in bodies)


# --- Slack and WhatsApp ------------------------------------------------------------------


def test_mrkdwn_marks() -> None:
    html = str(
        message_html(
            "*bold* _it_ ~gone~ `code` snake_case_name 2*3*4 ```mono```\n"
            "> quoted *x*\n```\nblock\n```",
            markup="mrkdwn",
        )
    )
    for fragment in (
        "<strong>bold</strong>",
        "<em>it</em>",
        "<s>gone</s>",
        "<code>code</code>",
        "snake_case_name",
        "2*3*4",
        "<code>mono</code>",
        "<blockquote>quoted <strong>x</strong></blockquote>",
        "<pre><code>block</code></pre>",
    ):
        assert fragment in html, fragment
    assert_safe(html)


# --- stickers, embeds, polls --------------------------------------------------------------


def test_stickers_from_each_shape() -> None:
    assert rendering.stickers({"media_type": "sticker", "sticker_emoji": "👍"}) == [
        rendering.Sticker("👍", "")
    ]
    assert rendering.stickers({"stickers": [{"id": "1", "name": "wave_cat"}]}) == [
        rendering.Sticker("", "wave_cat")
    ]
    assert rendering.stickers({"sticker_items": [{"name": "hi"}], "sticker": {"emoji": "🐱"}}) == [
        rendering.Sticker("🐱", ""),
        rendering.Sticker("", "hi"),
    ]
    assert rendering.stickers({"stickers": "nonsense", "sticker_emoji": {"x": 1}}) == []


def test_embeds_are_checked_and_empty_ones_left_out() -> None:
    found = rendering.embeds(
        {
            "embeds": [
                {
                    "title": "T" * 1000,
                    "url": "javascript:alert(1)",
                    "description": "d",
                    "provider": {"name": "GitHub"},
                    "fields": [{"name": "k", "value": "v"}, "junk"],
                },
                {"title": "", "description": "", "url": ""},
                "junk",
                {"url": "https://tenor.example/view/1"},
            ]
        }
    )
    assert len(found) == 2
    assert found[0].url == "" and len(found[0].title) <= rendering.SHORT
    assert found[0].provider == "GitHub" and found[0].fields == [rendering.EmbedField("k", "v")]
    assert found[1].url == "https://tenor.example/view/1" and found[1].host == "tenor.example"
    slack = rendering.embeds(
        {"attachments": [{"title": "Ticket", "title_link": "https://t.example/1", "text": "body"}]}
    )
    assert slack == [rendering.Embed("Ticket", "body", "https://t.example/1", "", "", [], "")]


def test_poll_place_and_contact() -> None:
    poll = rendering.poll(
        {
            "poll": {
                "question": "Lunch?",
                "closed": True,
                "answers": [{"text": "Pizza", "voters": 2, "chosen": True}],
            }
        }
    )
    assert poll == rendering.Poll("Lunch?", [rendering.PollAnswer("Pizza", 2, True)], True)
    place = rendering.place(
        {"location_information": {"latitude": 52.5, "longitude": 13.4}, "place_name": "Cafe"}
    )
    assert place is not None and place.name == "Cafe" and place.map_url.startswith("https://")
    assert rendering.place({"location_information": {"latitude": 500, "longitude": 0}}) is None
    assert rendering.contact(
        {"contact_information": {"first_name": "Ann", "phone_number": "+1 555"}}
    ) == ("Ann, +1 555")


@pytest.mark.parametrize(
    ("mime", "metadata", "kind"),
    [
        ("image/jpeg", {}, "image"),
        ("image/svg+xml", {}, "file"),
        ("audio/ogg", {"media_type": "voice_message"}, "audio"),
        ("audio/mpeg", {}, "audio"),
        ("video/mp4", {}, "video"),
        ("video/quicktime", {}, "file"),
        ("image/webp", {"media_type": "sticker"}, "sticker"),
        ("", {"media_type": "video"}, "video"),
        ("application/pdf", {}, "file"),
    ],
)
def test_media_kind(mime: str, metadata: dict[str, Any], kind: str) -> None:
    assert rendering.media_kind(mime, metadata) == kind


def test_file_badges_and_notes() -> None:
    assert rendering.file_badge("report.final.PDF", "") == "PDF"
    assert rendering.file_badge("noext", "audio/ogg") == "AUDIO"
    assert rendering.file_badge("weird.<script>", "") == "FILE"
    assert rendering.media_note({"omitted": True}) == "not included in the export"
    assert rendering.media_note({"file_missing": True}) == "missing from the export"
    assert rendering.media_note({"path_refused": True}).startswith("refused")
    assert rendering.duration({"duration_seconds": 65}) == "1:05"
    assert rendering.duration({"duration_seconds": 3725}) == "1:02:05"


def test_sticker_or_embed_only_messages_are_never_empty(owner_client: Client) -> None:
    batch_record(
        batch=batch(
            message("1", "", metadata={"media_type": "sticker", "sticker_emoji": "🐱"}),
            message(
                "2",
                "",
                minutes=1,
                metadata={"embeds": [{"title": "A page", "url": "https://p.example/"}]},
            ),
            message("3", "", minutes=2),
            message(
                "4",
                "",
                minutes=3,
                attachments=(
                    AttachmentRecord(
                        file_name="", metadata={"omitted": True, "media_type": "video"}
                    ),
                ),
            ),
        )
    )
    chat = Chat.objects.get()
    html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert '<span class="sticker-face">🐱</span>' in html
    assert "A page" in html and 'href="https://p.example/"' in html
    assert "No text or media was kept for this message." in html
    assert "Video" in html and "Not stored: not included in the export" in html


def test_stored_media_inline_players_and_chips(owner_client: Client) -> None:
    def file(name: str, mime: str, data: bytes) -> AttachmentRecord:
        blob = blob_put(io.BytesIO(data))
        return AttachmentRecord(
            external_id=name,
            file_name=name,
            mime_type=mime,
            size=blob.size,
            sha256=blob.sha256,
            blob_path=blob.path,
        )

    batch_record(
        batch=batch(
            message(
                "1",
                "media",
                attachments=(
                    file("voice.ogg", "audio/ogg", b"OggS fake"),
                    file("clip.mp4", "video/mp4", b"fake video"),
                    file("notes.pdf", "application/pdf", b"%PDF-1.4"),
                    file("photo.png", "image/png", b"\x89PNG fake"),
                    AttachmentRecord(
                        external_id="gone",
                        file_name="gone.zip",
                        mime_type="application/zip",
                        size=2048,
                    ),
                ),
            )
        )
    )
    chat = Chat.objects.get()
    html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    atts = {a.file_name: a.public_id for a in Message.objects.get().attachments.all()}
    assert (
        f'<audio controls preload="metadata" src="/attachments/{atts["voice.ogg"]}/"></audio>'
        in html
    )
    assert (
        f'<video controls preload="metadata" src="/attachments/{atts["clip.mp4"]}/"></video>'
        in html
    )
    assert f'src="/attachments/{atts["photo.png"]}/thumbnail/"' in html
    assert re.search(r'<span class="file-badge" aria-hidden="true">PDF</span>', html)
    assert re.search(
        r'class="file-chip missing"[^>]*>\s*<span class="file-badge" aria-hidden="true">ZIP<', html
    )
    assert "gone.zip" in html and "Not stored" in html


# --- e-mail ------------------------------------------------------------------------------

GMAIL = """Sounds good, see you then.

Ann

On Mon, 1 Jan 2024 at 10:00, Bob Example <bob@example.com> wrote:
> Lunch on Friday?
>
> Bob
"""

GMAIL_FOLDED = """Yes.

On Mon, 1 Jan 2024 at 10:00, Bob Example <
bob@example.com> wrote:
> Lunch?
"""

OUTLOOK = """Fine by me.

-----Original Message-----
From: Bob Example
Sent: Monday, January 1, 2024 10:00 AM
To: Ann
Subject: Lunch

Lunch on Friday?
"""

OUTLOOK_BLOCK = """Fine by me.

________________________________
From: Bob Example <bob@example.com>
Sent: Monday, January 1, 2024 10:00
To: Ann <ann@example.com>
Subject: Lunch

Lunch on Friday?
"""

GERMAN = """Passt.

Am 01.01.2024 um 10:00 schrieb Bob Example <bob@example.com>:
> Mittagessen?
"""

TRAILING = """Agreed.

> Lunch on Friday?
> Bob
"""

INTERLEAVED = """> Lunch on Friday?
Yes!
> Where?
The usual place.
"""


@pytest.mark.parametrize(
    ("text", "new", "quoted_start"),
    [
        (GMAIL, "Sounds good, see you then.\n\nAnn", "On Mon, 1 Jan 2024"),
        (GMAIL_FOLDED, "Yes.", "On Mon, 1 Jan 2024"),
        (OUTLOOK, "Fine by me.", "-----Original Message-----"),
        (OUTLOOK_BLOCK, "Fine by me.", "________________________________"),
        (GERMAN, "Passt.", "Am 01.01.2024"),
        (TRAILING, "Agreed.", "> Lunch on Friday?"),
    ],
)
def test_mail_quoted_history_is_split_off(text: str, new: str, quoted_start: str) -> None:
    split = rendering.mail_split(text)
    assert split.new == new
    assert split.quoted.startswith(quoted_start)
    assert "Lunch" in split.quoted or "Mittagessen" in split.quoted


@pytest.mark.parametrize(
    "text",
    [
        INTERLEAVED,  # answers between quotes: nothing to fold away
        "> only a quote\n> nothing new\n",  # all quote: shown whole
        "On the way home I wrote: a poem\nand more text",  # no attribution line of its own
        "From: me, with love\nno header block here",
        "",
    ],
)
def test_mail_without_a_history_to_fold_stays_whole(text: str) -> None:
    split = rendering.mail_split(text)
    assert split == rendering.MailText(text)


def test_mail_header_from_metadata() -> None:
    header = rendering.mail_header(
        {
            "subject": "Lunch",
            "from": {"name": "Ann", "email": "ann@example.com"},
            "to": [{"name": "", "email": "bob@example.com"}],
            "cc": None,
        }
    )
    assert header is not None
    assert str(header.sender) == "Ann <ann@example.com>"
    assert [str(p) for p in header.to] == ["bob@example.com"] and header.cc == []
    assert rendering.mail_header({"subject": "x"}) is None
    assert rendering.mail_header({"entities": []}) is None


def test_mail_card_with_quoted_text_folded(owner_client: Client) -> None:
    metadata = {
        "subject": "Lunch <b>plans</b>",
        "from": {"name": "Ann", "email": "ann@example.com"},
        "to": [{"name": "Bob", "email": "bob@example.com"}],
        "cc": [{"name": "", "email": "carol@example.com"}],
    }
    batch_record(batch=batch(message("1", GMAIL, metadata=metadata)))
    chat = Chat.objects.get()
    html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert "<dt>From</dt><dd>Ann &lt;ann@example.com&gt;</dd>" in html
    assert "<dt>To</dt><dd>Bob &lt;bob@example.com&gt;</dd>" in html
    assert "<dt>Cc</dt><dd>carol@example.com</dd>" in html
    assert "Lunch &lt;b&gt;plans&lt;/b&gt;" in html
    assert "<dt>Date</dt>" in html
    new_at = html.index("Sounds good, see you then.")
    folded_at = html.index("<summary>Show quoted text</summary>")
    assert new_at < folded_at < html.index("&gt; Lunch on Friday?")


def test_mail_fixture_gets_a_mail_card(owner_client: Client) -> None:
    job = import_job_create(source=FIXTURES / "mail" / "threads.mbox")
    import_run(job_id=job.pk)
    message_row = Message.objects.exclude(provider_metadata__subject="").first()
    assert message_row is not None
    html = owner_client.get(f"/chats/{message_row.chat_id}/").content.decode()
    assert 'class="mail-head"' in html and "<dt>Subject</dt>" in html


# --- revisions -----------------------------------------------------------------------------


def test_word_diff_marks_what_changed() -> None:
    parts = rendering.word_diff("the quick brown fox", "the slow brown cat!")
    assert parts == [
        rendering.DiffPart("same", "the "),
        rendering.DiffPart("del", "quick"),
        rendering.DiffPart("ins", "slow"),
        rendering.DiffPart("same", " brown "),
        rendering.DiffPart("del", "fox"),
        rendering.DiffPart("ins", "cat!"),
    ]
    assert rendering.word_diff("same", "same") == [rendering.DiffPart("same", "same")]
    assert rendering.word_diff("", "new") == [rendering.DiffPart("ins", "new")]


@given(st.text(max_size=60), st.text(max_size=60))
def test_word_diff_rebuilds_both_versions(before: str, after: str) -> None:
    parts = rendering.word_diff(before, after)
    assert "".join(p.text for p in parts if p.op != "ins") == before
    assert "".join(p.text for p in parts if p.op != "del") == after


def test_word_diff_of_huge_versions_is_bounded() -> None:
    before = "word " * 10_000
    after = "other " * 10_000
    parts = rendering.word_diff(before, after)
    assert parts == [rendering.DiffPart("del", before), rendering.DiffPart("ins", after)]


def test_revision_steps_newest_first_with_times() -> None:
    t1, t2 = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 2, tzinfo=UTC)
    revisions = [
        SimpleNamespace(text="one", edited_at=t1, recorded_at=t1),
        SimpleNamespace(text="one two", edited_at=None, recorded_at=t2),
    ]
    steps = rendering.revision_steps(revisions=revisions, current="one two three", edited_at=t2)
    assert [(s.before, s.after, s.is_current) for s in steps] == [
        ("one two", "one two three", True),
        ("one", "one two", False),
    ]
    assert steps[0].edited_at == t2 and steps[1].edited_at == t1
    assert steps[0].parts[-1] == rendering.DiffPart("ins", " three")


def test_revisions_page_shows_each_edit_as_a_diff(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "meet at five <b>", minutes=0)))
    batch_record(
        batch=batch(message("1", "meet at six <b>", minutes=0, edited_at=T0 + timedelta(hours=1)))
    )
    batch_record(
        batch=batch(
            message("1", "meet at six tomorrow <b>", minutes=0, edited_at=T0 + timedelta(hours=2))
        )
    )
    msg = Message.objects.get()
    fragment = owner_client.get(
        f"/m/{msg.public_id}/revisions/", HTTP_HX_REQUEST="true"
    ).content.decode()
    found = re.search(r"<ins>\s?tomorrow\s?</ins>", fragment)
    assert found is not None
    newest = found.start()
    older = fragment.index("<del>five</del><ins>six</ins>")
    assert newest < older
    assert "&lt;b&gt;" in fragment and "<b>" not in fragment
    assert "Edited <time" in fragment
    full = owner_client.get(f"/m/{msg.public_id}/revisions/").content.decode()
    assert "<html" in full and "wirecat/chat.css" in full


# --- a one-line preview (a reply's quote) -----------------------------------------------


def test_previews_are_plain_text_without_markup_or_history(db: None) -> None:
    discord = dataclasses.replace(ACCOUNT, provider="discord")
    batch_record(
        batch=dataclasses.replace(
            batch(
                message("1", "**Bold** and ||hidden|| <script>x</script>"),
                message("2", GMAIL, minutes=1, metadata={"subject": "s", "from": {"name": "Ann"}}),
                message(
                    "3", "", minutes=2, metadata={"media_type": "sticker", "sticker_emoji": "🐱"}
                ),
                message(
                    "4",
                    "",
                    minutes=3,
                    attachments=(
                        AttachmentRecord(file_name="plan.pdf", mime_type="application/pdf"),
                    ),
                ),
                message("5", "x" * 500, minutes=4),
            ),
            account=discord,
        )
    )
    rows = list(Message.objects.prefetch_related("attachments").order_by("sent_at"))
    chat = Chat.objects.select_related("account").get()
    template = Template(
        "{% load wirecat_messages %}{% for m in rows %}{% message_preview m 60 %}|{% endfor %}"
    )
    html = template.render(Context({"rows": rows, "chat": chat}))
    first, mail, sticker, attachment, long, _ = html.split("|")
    assert first == "Bold and hidden &lt;script&gt;x&lt;/script&gt;"
    assert mail == "Sounds good, see you then. Ann"
    assert sticker == "Sticker 🐱"
    assert attachment == "plan.pdf"
    assert len(long) == 60 and long.endswith("…")
    # Without the chat's row at hand, one query finds the markup; attachments not read
    # with the parent are not looked up (no query per reply).
    parents = list(Message.objects.order_by("sent_at"))
    with CaptureQueriesContext(connection) as queries:
        html = template.render(Context({"rows": parents}))
    assert len(queries) == 1
    assert html.split("|")[3] == "Media"


# --- cost ------------------------------------------------------------------------------------


def test_content_of_50_messages_costs_one_query_for_the_markup(
    db: None, django_assert_num_queries: Any
) -> None:
    batch_record(
        batch=batch(
            *[
                message(
                    str(i),
                    f"**m{i}** https://x.example/{i}",
                    minutes=i,
                    metadata={"embeds": [{"title": f"e{i}"}]},
                    attachments=(AttachmentRecord(file_name=f"{i}.txt", size=i),),
                )
                for i in range(50)
            ]
        )
    )
    rows = list(Message.objects.prefetch_related("attachments").order_by("sent_at"))
    template = Template(
        "{% load wirecat_messages %}{% for m in rows %}{% message_content m %}{% endfor %}"
    )
    # No `chat` in the context and no chat on the rows: one query finds the provider.
    with django_assert_num_queries(1):
        html = template.render(Context({"rows": rows}))
    assert html.count('class="mc"') == 50
    chat = Chat.objects.select_related("account").get()
    with django_assert_num_queries(0):
        template.render(Context({"rows": rows, "chat": chat}))
