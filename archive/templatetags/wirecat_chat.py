"""The chat page's per-message actions menu, built in Python: fifty messages a page each
with a menu of five links made the template engine's variable lookups a third of the
page's time; here it is one string format per message."""

from __future__ import annotations

import functools
from typing import Any

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()


@functools.cache
def _like_start() -> str:
    """The start of a "more like this" address (the search page's, by meaning): reversed
    once, not for each of a page's messages."""
    return f"{reverse('archive:search')}?like=message:"


@register.simple_tag
def message_menu(row: Any, links: dict[str, str], deleted_param: str = "") -> SafeString:
    """The <details> menu of one message (a MessageRow): add a tag, make a task, its
    permalink, copy its text (chat.js shows that one), write a note linked to it, open it in
    its conversation, search for more like it (by meaning), its earlier versions if edited.
    Every item is a link that works without JavaScript; htmx loads two of them in place."""
    mid = row.message.public_id
    page = links["message"] + mid + "/"
    task = links["task_new"] + mid
    revisions = ""
    if row.message.edited_at:
        revisions = format_html(
            '<a class="act-revisions" href="{0}revisions/" hx-get="{0}revisions/"'
            ' hx-target="#rev-{1}" hx-swap="innerHTML">Earlier versions</a>',
            page,
            mid,
        )
    return format_html(
        '<details class="actions"><summary aria-label="Actions for this message" title="Actions">'
        '<span aria-hidden="true">⋯</span></summary><div class="menu">'
        '<a class="act-tag" href="?at={0}&amp;tag={0}{1}#tags-message-{0}">Add a tag…</a>'
        '<a class="make-task" href="{2}" hx-get="{2}" hx-target="#slot-{0}" hx-swap="innerHTML">'
        "Make a task</a>"
        '<a class="act-link" href="{3}">Permalink</a>'
        '<button type="button" class="act-copy" hidden>Copy text</button>'
        '<a class="act-note" href="{5}">Write a note</a>'
        '<a class="act-conversation" href="{3}conversation/">Show its conversation</a>'
        '<a class="act-like" href="{6}{0}">More like this</a>'
        "{4}</div></details>",
        mid,
        deleted_param,
        task,
        page,
        revisions,
        links["note_new"] + mid,
        _like_start(),
    )
