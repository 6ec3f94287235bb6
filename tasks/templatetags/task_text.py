"""Task descriptions: markdown (CommonMark, raw HTML off) made into HTML, then cleaned by
nh3 to an allow-list of tags and http(s)/mailto links, so nothing written there runs."""

from __future__ import annotations

import nh3
from django import template
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

register = template.Library()

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
_TAGS = {
    "p",
    "br",
    "strong",
    "em",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "h1",
    "h2",
    "h3",
    "h4",
    "hr",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "del",
}


@register.filter
def markdown(text: str | None) -> SafeString:
    html = _MARKDOWN.render(text or "")
    cleaned = nh3.clean(
        html,
        tags=_TAGS,
        attributes={"a": {"href", "title"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener nofollow noreferrer",
    )
    return mark_safe(cleaned)  # noqa: S308 - cleaned by nh3 just above
