"""Charts drawn on the server as SVG: no JavaScript charting library, nothing to load."""

from __future__ import annotations

from datetime import date
from typing import Protocol

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

register = template.Library()

WIDTH, HEIGHT, GAP = 720, 120, 1


class Series(Protocol):
    """Counts per bucket (archive.people.selectors.Activity): `unit` "week" or "month"."""

    unit: str
    buckets: list[tuple[date, int]]


def _bucket_name(start: date, unit: str) -> str:
    return f"{start:%B %Y}" if unit == "month" else f"week of {start.isoformat()}"


def _edge(start: date, unit: str) -> str:
    return f"{start:%b %Y}" if unit == "month" else start.isoformat()


@register.simple_tag
def activity_chart(series: Series | list[tuple[date, int]], label: str = "") -> SafeString:
    """Bars of messages per week or per month with the busiest bucket's count as the scale;
    each bar has a tooltip (`<title>`) with its week or month and count, and a thin mark
    starts each new year. A series is an Activity (its unit says week or month) or a
    plain list of (Monday, count). An empty history draws nothing."""
    unit = getattr(series, "unit", "week")
    buckets: list[tuple[date, int]] = getattr(series, "buckets", series)  # type: ignore[arg-type]
    label = label or f"Messages per {unit}"
    if not buckets or not any(count for _, count in buckets):
        return format_html('<p class="muted chart-empty">{}</p>', "No messages to chart yet.")
    peak = max(count for _, count in buckets)
    step = WIDTH / len(buckets)
    bar = max(step - GAP, 1)

    def height(count: int) -> float:
        return max((count / peak) * HEIGHT, 1 if count else 0)

    bars = format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}"><title>{}: {}</title></rect>',
        (
            (
                f"{i * step:.1f}",
                f"{HEIGHT - height(count):.1f}",
                f"{bar:.1f}",
                f"{height(count):.1f}",
                _bucket_name(start, unit),
                f"{count:,} message{'s' if count != 1 else ''}",
            )
            for i, (start, count) in enumerate(buckets)
        ),
    )
    # A new year starts in the bucket whose year differs from the one before it.
    years = format_html_join(
        "",
        '<line class="year" x1="{}" x2="{}" y1="0" y2="{}"><title>{}</title></line>',
        (
            (f"{i * step:.1f}", f"{i * step:.1f}", HEIGHT, start.year)
            for i, (start, _) in enumerate(buckets)
            if i and start.year != buckets[i - 1][0].year
        ),
    )
    first, last = _edge(buckets[0][0], unit), _edge(buckets[-1][0], unit)
    return format_html(
        '<figure class="chart" data-unit="{}"><svg viewBox="0 0 {} {}" preserveAspectRatio="none"'
        ' role="img" aria-label="{}: up to {} a {}, {} to {}">{}{}</svg>'
        "<figcaption><span>{}</span><span>{} · busiest {} {}</span><span>{}</span></figcaption>"
        "</figure>",
        unit,
        WIDTH,
        HEIGHT,
        label,
        peak,
        unit,
        first,
        last,
        years,
        bars,
        first,
        label,
        unit,
        f"{peak:,}",
        last,
    )
