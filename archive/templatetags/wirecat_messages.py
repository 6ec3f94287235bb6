"""A message's content on a page: its text (formatted), its media and, for mail, its card.

`{% message_content m %}` renders what goes inside a message's bubble: the chat page, a
search hit's context and a permalink all show a message the same way. The chat page's
layout (who, when, grouping, the actions menu) is the page's; this is only the content.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.simple_tag
def message_content(message: Any) -> SafeString:
    """The content of `message` (read with its attachments prefetched)."""
    return mark_safe(  # noqa: S308 - a template with autoescape on
        render_to_string("archive/_message_content.html", {"m": message})
    )
