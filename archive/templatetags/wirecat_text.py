"""Message text for pages: escaped, with web links made clickable safely."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# http(s) links only: other schemes (javascript:, data:, file:) stay plain text.
_LINK = re.compile(r"\bhttps?://[^\s<>\"'\x00-\x1f]+", re.IGNORECASE)
_TRAILING = ".,;:!?)]}'\""


@register.filter(is_safe=True)
def linkify(text: str | None) -> SafeString:
    """Escape `text` and turn http(s) URLs into links with rel="noopener nofollow"."""
    if not text:
        return mark_safe("")
    out: list[str] = []
    pos = 0
    for match in _LINK.finditer(text):
        url = match.group(0)
        trimmed = url.rstrip(_TRAILING)
        # Keep a closing parenthesis that belongs to the URL, e.g. wiki links.
        if url.endswith(")") and trimmed.count("(") > trimmed.count(")"):
            trimmed += ")"
        end = match.start() + len(trimmed)
        out.append(escape(text[pos : match.start()]))
        out.append(
            format_html(
                '<a href="{}" rel="noopener nofollow noreferrer" target="_blank">{}</a>',
                trimmed,
                trimmed,
            )
        )
        pos = end
    out.append(escape(text[pos:]))
    return mark_safe("".join(out))  # noqa: S308 - every piece above is escaped


@register.filter
def filesize(size: int | None) -> str:
    if size is None:
        return "size unknown"
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


@register.filter
def ago(moment: datetime | None) -> str:
    if moment is None:
        return "never"
    seconds = int((timezone.now() - moment).total_seconds())
    if seconds < 90:
        return f"{max(seconds, 0)} s ago"
    if seconds < 5400:
        return f"{seconds // 60} min ago"
    if seconds < 172800:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} days ago"


@register.filter
def lookup(mapping: dict[Any, Any] | None, key: Any) -> Any:
    """`mapping|lookup:key`, or an empty list when it has no such key."""
    if not mapping:
        return []
    return mapping.get(key, [])


@register.filter
def tag_query(name: str) -> str:
    """The query that finds a tag: `tag:name`, quoted when the name holds spaces."""
    return (
        f'tag:"{name}"' if any(char.isspace() or char in "()" for char in name) else f"tag:{name}"
    )


@register.filter
def search_value(value: str, field: str) -> str:
    """`field:value` for a query, quoted when the value holds spaces or parentheses."""
    text = str(value).replace('"', "")
    return f'{field}:"{text}"' if any(c.isspace() or c in "()" for c in text) else f"{field}:{text}"
