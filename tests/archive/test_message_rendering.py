"""A message's text as a messenger shows it: formatting from what the store holds
(Telegram entities, Discord markdown, Slack/WhatsApp marks), safe whatever the input.
Stickers, media, mail cards, revisions and previews: test_message_content_parts.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from archive.connectors.registry import text_markup
from archive.imports.services import import_job_create, import_run
from archive.store.models import Chat
from archive.web.formatting import MAX_FORMATTED, message_html

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
