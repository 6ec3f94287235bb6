"""What the API's own string formats mean, for schemathesis to generate them.

The OpenAPI schema names a format where a value is one only the server makes or reads: a
cursor it gave out, or a query in the query language. The server refuses anything else
with 422, which the format says; JSON Schema cannot spell these out as a pattern. Here each
format gets a strategy that draws only values of it, so "a schema-valid request" means the
same to schemathesis as to the server. (The cursors are made by the server's own encoders;
a query is drawn from the language's words, phrases, prefixes, exclusions and OR, and kept
only when the parser reads it.)
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import schemathesis
from hypothesis import strategies as st

from archive.gateway.selectors import _token
from archive.search import everything
from archive.search.parser import parse
from archive.search.querykit import MAX_OFFSET, offset_cursor
from wirecat.errors import Invalid

_ROW = st.integers(min_value=0, max_value=2**62 - 1)


def _chat_cursor(at: datetime, pk: int) -> str:
    # archive.store.selectors.encode_cursor, from its parts rather than a stored message.
    raw = json.dumps([at.isoformat(), pk]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _parses(query: str) -> bool:
    try:
        parse(query)
    except Invalid:
        return False
    return True


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)
_TERM = st.one_of(
    _WORD,
    st.lists(_WORD, min_size=1, max_size=3).map(lambda words: '"' + " ".join(words) + '"'),
    _WORD.filter(lambda w: w[0].isalpha()).map(lambda w: w + "*"),
    _WORD.map(lambda w: "-" + w),
)
QUERIES = st.lists(st.one_of(_TERM, st.just("OR")), max_size=5).map(" ".join).filter(_parses)

# A tag name: 1 to 64 characters, some not a space, none `"` nor of Unicode's category C as
# the server's Python reads it (archive.web.schemas.TagName); now and then one that exists.
TAG_NAMES = st.one_of(
    st.sampled_from(["follow-up", "Follow-Up", "family"]),
    st.text(
        alphabet=st.characters(exclude_categories=["C"], exclude_characters='"'),
        min_size=1,
        max_size=64,
    ).filter(str.strip),
)

FORMATS = {
    "wirecat-tag-name": TAG_NAMES,
    "wirecat-query": QUERIES,
    "wirecat-unread-cursor": _ROW.map(lambda n: _token("u", n)),
    "wirecat-changes-cursor": _ROW.map(lambda n: _token("c", n)),
    "wirecat-imported-cursor": _ROW.map(lambda n: _token("i", n)),
    "wirecat-chat-cursor": st.builds(
        _chat_cursor,
        st.datetimes(min_value=datetime(1971, 1, 1), timezones=st.just(UTC)),
        _ROW,
    ),
    # notes.api's cursor is made as the chat's: a note's last change and its row id.
    "wirecat-notes-cursor": st.builds(
        _chat_cursor,
        st.datetimes(min_value=datetime(1971, 1, 1), timezones=st.just(UTC)),
        _ROW,
    ),
    # archive.files' cursor is made as the chat's: the message's time and the file's row id.
    "wirecat-attachments-cursor": st.builds(
        _chat_cursor,
        st.datetimes(min_value=datetime(1971, 1, 1), timezones=st.just(UTC)),
        _ROW,
    ),
    # A search's cursor holds for the same query and sort only, which a schema cannot tie
    # together: the one cursor valid for every search is the first page's, "".
    "wirecat-search-cursor": st.just(""),
    # Search all's cursor is an offset into the fused list, any of which a search can page to.
    "wirecat-search-all-cursor": st.integers(min_value=0, max_value=MAX_OFFSET).map(
        lambda n: offset_cursor(n, everything._CURSOR_MARK)
    ),
}


def register() -> None:
    for name, strategy in FORMATS.items():
        schemathesis.openapi.format(name, strategy)
