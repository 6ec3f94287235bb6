"""Charts drawn on the server as SVG: no JavaScript charting library, nothing to load."""

from __future__ import annotations

from datetime import date

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

register = template.Library()

WIDTH, HEIGHT, GAP = 720, 120, 1


@register.simple_tag
def activity_chart(weeks: list[tuple[date, int]], label: str = "Messages per week") -> SafeString:
    """Bars of messages per week with the busiest week's count as the scale; each bar has a
    tooltip (`<title>`) with its week and count. An empty history draws nothing."""
    if not weeks or not any(count for _, count in weeks):
        return format_html('<p class="muted chart-empty">{}</p>', "No messages to chart yet.")
    peak = max(count for _, count in weeks)
    step = WIDTH / len(weeks)
    bar = max(step - GAP, 1)
    bars = format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}"><title>{}: {}</title></rect>',
        (
            (
                f"{i * step:.1f}",
                f"{HEIGHT - max((count / peak) * HEIGHT, 1 if count else 0):.1f}",
                f"{bar:.1f}",
                f"{max((count / peak) * HEIGHT, 1 if count else 0):.1f}",
                f"week of {monday.isoformat()}",
                f"{count:,} message{'s' if count != 1 else ''}",
            )
            for i, (monday, count) in enumerate(weeks)
        ),
    )
    first, last = weeks[0][0].isoformat(), weeks[-1][0].isoformat()
    return format_html(
        '<figure class="chart"><svg viewBox="0 0 {} {}" preserveAspectRatio="none" role="img"'
        ' aria-label="{}: up to {} a week, {} to {}">{}</svg>'
        "<figcaption><span>{}</span><span>{} · busiest week {}</span><span>{}</span></figcaption>"
        "</figure>",
        WIDTH,
        HEIGHT,
        label,
        peak,
        first,
        last,
        bars,
        first,
        label,
        f"{peak:,}",
        last,
    )
