"""Python values as the store holds them, for code that writes SQL by hand."""

from __future__ import annotations

import re
from datetime import UTC, datetime

# A lone UTF-16 surrogate (half an emoji cut by a broken export, or typed into a query)
# cannot be encoded for SQLite; the store keeps U+FFFD in its place.
_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    try:
        text.encode("utf-8")  # in C: fails only when a lone surrogate is there
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def db_time(value: datetime) -> str:
    """The text Django's SQLite backend stores for an aware datetime: naive UTC."""
    if value.tzinfo is not UTC:  # most providers' times are UTC already
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None).isoformat(" ")
