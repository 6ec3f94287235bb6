"""Untrusted text on pages, and page cursors from the address bar."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archive.store.selectors import decode_cursor
from archive.templatetags.wirecat_text import filesize, linkify
from wirecat.errors import Invalid

TAG = re.compile(r"<(?!/?a[ >])")


@given(st.text())
def test_linkify_never_lets_markup_through(text: str) -> None:
    html = str(linkify(text))
    assert not TAG.search(html)  # the only tags are the links we made
    for href in re.findall(r'href="([^"]*)"', html):
        assert href.startswith(("http://", "https://"))


def link(url: str) -> str:
    return f'<a href="{url}" rel="noopener nofollow noreferrer" target="_blank">{url}</a>'


WIKI = "https://en.wikipedia.org/wiki/Cat_(disambiguation)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see https://example.org.", f"see {link('https://example.org')}."),
        (f"({WIKI})", f"({link(WIKI)})"),
        ("javascript:alert(1)", "javascript:alert(1)"),
        ('"><img src=x onerror=alert(1)>', "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"),
        ("", ""),
    ],
)
def test_linkify_cases(text: str, expected: str) -> None:
    assert str(linkify(text)) == expected


@given(st.text())
def test_any_cursor_string_is_either_valid_or_invalid(raw: str) -> None:
    try:
        sent_at, pk = decode_cursor(raw)
    except Invalid:
        return
    assert sent_at.tzinfo is not None and isinstance(pk, int)


def test_filesize() -> None:
    assert [filesize(None), filesize(12), filesize(2048), filesize(5 * 1024**3)] == [
        "size unknown",
        "12 B",
        "2.0 KB",
        "5.0 GB",
    ]
