"""Filters of the list pages (the chat list): times as a messenger's list shows them."""

from __future__ import annotations

from datetime import date, datetime

from django import template
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()


@register.filter
def list_time(moment: datetime | None, today: date | None = None) -> str:
    """A message's time in a list, in the archive's time zone: "14:05" today, the weekday
    ("Tue") within the last week, "12 Mar" this year, else "12 Mar 2016"."""
    if moment is None:
        return ""
    local = timezone.localtime(moment) if timezone.is_aware(moment) else moment
    today = today or timezone.localdate()
    age = (today - local.date()).days
    if age == 0:
        return local.strftime("%H:%M")
    if 0 < age < 7:
        return date_format(local, "D")
    if local.year == today.year:
        return date_format(local, "j M")
    return date_format(local, "j M Y")


@register.simple_tag
def list_time_element(moment: datetime | None) -> SafeString:
    """`<time>` of a list row: the short time (`list_time`) shown, the full one as its
    title and datetime; one call per row, for lists of many rows."""
    if moment is None:
        return SafeString("")
    local = timezone.localtime(moment) if timezone.is_aware(moment) else moment
    return format_html(
        '<time class="chatrow-time" datetime="{}" title="{}">{}</time>',
        local.isoformat(),
        local.strftime("%Y-%m-%d %H:%M"),
        list_time(local),
    )


@register.filter
def thousands(number: int | None) -> str:
    """12345 → "12,345" (what `intcomma` says, without its locale lookups)."""
    return f"{int(number or 0):,}"
