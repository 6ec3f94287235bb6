"""The Statistics page's charts, drawn on the server as SVG like wirecat_charts.py: messages
over time (the owner's own part stacked below the rest), the hour-of-week heatmap, the
response times over time on a log scale, horizontal bars for the top chats and people.

Every chart is a `<figure>` whose `<svg>` has role="img" and an aria-label saying what it
shows; bars carry a `<title>` tooltip. Colours come from CSS (pages.css, "statistics"),
never from attributes, so light and dark both read. The page puts a table with the same
numbers behind each chart. Nothing here divides by a zero peak: an empty series draws a
sentence instead."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# The plots of messages over time and response times: user units are pixels vertically
# (the viewBox is as tall as the svg), stretched to the width horizontally; the axis
# column beside them is AXIS px wide.
PLOT_WIDTH, PLOT_HEIGHT, PLOT_TOP, AXIS = 720, 180, 12, 52
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# The heatmap: a column of day names, then 24 square cells a row; the hours under them.
CELL, LABEL_WIDTH, HOURS_HEIGHT = 24, 46, 24
# Round durations the response times' axis is ruled at (seconds, words).
DURATION_TICKS = (
    (1, "1 s"),
    (10, "10 s"),
    (60, "1 min"),
    (600, "10 min"),
    (3600, "1 h"),
    (6 * 3600, "6 h"),
    (86400, "1 day"),
    (7 * 86400, "1 week"),
    (30 * 86400, "30 days"),
    (365 * 86400, "1 year"),
)


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


@register.filter
def duration(seconds: float | None) -> str:
    """Seconds as a person says them: "45 s", "3 min", "1.5 h", "2 h", "3 days"; "-" for
    none."""
    if seconds is None:
        return "-"
    value = max(float(seconds), 0.0)
    if value < 60:
        return f"{round(value)} s"
    if value < 3600:
        return f"{round(value / 60)} min"
    if value < 86400:
        hours = value / 3600
        return f"{hours:.1f} h".replace(".0 h", " h") if hours < 10 else f"{round(hours)} h"
    days = value / 86400
    shown = f"{days:.1f}".removesuffix(".0") if days < 10 else f"{round(days)}"
    return f"{shown} day" if shown == "1" else f"{shown} days"


def bucket_name(start: date, unit: str) -> str:
    """A bucket in words for tooltips and tables: "4 May 2026", "week of 4 May 2026",
    "May 2026"."""
    if unit == "month":
        return f"{start:%B %Y}"
    day = f"{start.day} {start:%b %Y}"
    return f"week of {day}" if unit == "week" else day


register.filter("bucket_name", bucket_name)


def _edge(start: date, unit: str) -> str:
    return f"{start:%b %Y}" if unit == "month" else f"{start.day} {start:%b %Y}"


def _empty(sentence: str) -> SafeString:
    return format_html('<p class="muted chart-empty">{}</p>', sentence)


def _ticks(values: list[tuple[float, str]]) -> SafeString:
    """Rules across the plot at these heights (user units from the top)."""
    return format_html_join(
        "",
        '<line class="rule" x1="0" x2="{}" y1="{}" y2="{}"></line>',
        ((PLOT_WIDTH, f"{y:.1f}", f"{y:.1f}") for y, _ in values),
    )


def _tick_labels(values: list[tuple[float, str]]) -> SafeString:
    """Each rule's label beside it, right-aligned in the axis column."""
    return format_html_join(
        "",
        '<text class="tick" x="{}" y="{}">{}</text>',
        ((AXIS - 6, f"{y + 4:.1f}", label) for y, label in values),
    )


def _plot(inner: SafeString, rules: list[tuple[float, str]], label: str) -> SafeString:
    """A row of two svgs PLOT_HEIGHT px tall: the axis column with the rules' labels at
    their true size, and the plot stretched to the rest of the width. The row is the
    image (its aria-label the chart in words); the bars' tooltips stay."""
    return format_html(
        '<div class="plot-row" role="img" aria-label="{}">'
        '<svg class="axis" width="{}" height="{}">{}</svg>'
        '<svg class="plot" viewBox="0 0 {} {}" height="{}" preserveAspectRatio="none">{}{}</svg>'
        "</div>",
        label,
        AXIS,
        PLOT_HEIGHT,
        _tick_labels(rules),
        PLOT_WIDTH,
        PLOT_HEIGHT,
        PLOT_HEIGHT,
        _ticks(rules),
        inner,
    )


def _round_up(peak: int) -> int:
    """The smallest 1, 2 or 5 times a power of ten at or above `peak` (at least 1)."""
    if peak <= 1:
        return 1
    power = 10 ** math.floor(math.log10(peak))
    for step in (1, 2, 5, 10):
        if step * power >= peak:
            return step * power
    return 10 * power


@register.simple_tag
def volume_chart(
    buckets: Sequence[tuple[date, int]],
    sent: Sequence[tuple[date, int]] | None = None,
    unit: str = "week",
) -> SafeString:
    """Bars of messages per day, week or month, the owner's own (`sent`, per the same
    buckets) stacked at the foot of each bar in their own colour; rules at a round top and
    its half. An empty range draws a sentence."""
    if not buckets or not any(count for _, count in buckets):
        return _empty("No messages in this range.")
    mine = dict(sent or [])
    top = _round_up(max(count for _, count in buckets))
    span = PLOT_HEIGHT - PLOT_TOP
    step = PLOT_WIDTH / len(buckets)
    bar = max(step * 0.82, min(step, 1.0))

    def height(count: int) -> float:
        return max(count / top * span, 1.5 if count else 0)

    def one(i: int, start: date, count: int) -> tuple[object, ...]:
        own = min(mine.get(start, 0), count)
        whole, low = height(count), height(own) if own else 0.0
        x = i * step + (step - bar) / 2
        words = f"{bucket_name(start, unit)}: {_plural(count, 'message')}"
        if sent is not None:
            words += f", {own:,} yours"
        return (
            words,
            f"{x:.2f}",
            f"{PLOT_HEIGHT - whole:.2f}",
            f"{bar:.2f}",
            f"{whole - low:.2f}",
            f"{x:.2f}",
            f"{PLOT_HEIGHT - low:.2f}",
            f"{bar:.2f}",
            f"{low:.2f}",
        )

    bars = format_html_join(
        "",
        '<g class="bucket"><title>{}</title><rect class="in" x="{}" y="{}" width="{}" height="{}">'
        '</rect><rect class="out" x="{}" y="{}" width="{}" height="{}"></rect></g>',
        (one(i, start, count) for i, (start, count) in enumerate(buckets)),
    )
    total = sum(count for _, count in buckets)
    peak_start, peak = max(buckets, key=lambda item: item[1])
    first, last = _edge(buckets[0][0], unit), _edge(buckets[-1][0], unit)
    label = (
        f"Messages per {unit}, {first} to {last}: {_plural(total, 'message')}"
        + (f", {sum(mine.values()):,} of them yours" if sent is not None else "")
        + f"; the busiest: {bucket_name(peak_start, unit)}, with {peak:,}."
    )
    rules = [(float(PLOT_TOP), f"{top:,}"), (PLOT_TOP + span / 2, f"{top / 2:,g}")]
    return format_html(
        '<figure class="stats-chart volume-chart" data-unit="{}">{}'
        '<figcaption><span class="edge">{}</span><span class="legend">'
        '<span class="key key-in">From others</span>{}</span><span class="edge">{}</span>'
        "</figcaption></figure>",
        unit,
        _plot(bars, rules, label),
        first,
        mark_safe('<span class="key key-out">Yours</span>') if sent is not None else "",
        last,
    )


@register.simple_tag
def heatmap_chart(cells: Sequence[Sequence[int]], peak: int) -> SafeString:
    """Messages by weekday (rows, Monday first) and hour (columns), local time: five
    shades from none to the busiest hour, each cell with its count as a tooltip."""
    if not cells or peak <= 0:
        return _empty("No messages in this range.")

    def level(count: int) -> int:
        return 0 if count <= 0 else min(4, 1 + math.floor(count / peak * 3.999))

    rects = format_html_join(
        "",
        '<rect class="l{}" x="{}" y="{}" width="{}" height="{}" rx="3">'
        "<title>{} {}:00-{}:00: {}</title></rect>",
        (
            (
                level(count),
                LABEL_WIDTH + hour * CELL + 1,
                row * CELL + 1,
                CELL - 2,
                CELL - 2,
                DAYS[row],
                f"{hour:02d}",
                f"{(hour + 1) % 24:02d}",
                _plural(count, "message"),
            )
            for row, counts in enumerate(cells[:7])
            for hour, count in enumerate(list(counts)[:24])
        ),
    )
    # "Mon" beside the squares; on a phone (pages.css) "Mo", at a larger size.
    days = format_html_join(
        "",
        '<text class="day" x="{}" y="{}">{}</text><text class="day short" x="{}" y="{}">{}</text>',
        (
            (x, y, name[:3], x, y, name[:2])
            for x, y, name in (
                (LABEL_WIDTH - 5, row * CELL + CELL * 0.68, day) for row, day in enumerate(DAYS)
            )
        ),
    )
    hours = format_html_join(
        "",
        '<text class="hour{}" x="{}" y="{}">{}</text>',
        (
            (
                "" if hour % 6 == 0 else " minor",
                LABEL_WIDTH + hour * CELL + CELL / 2,
                7 * CELL + 19,
                hour,
            )
            for hour in range(0, 24, 3)
        ),
    )
    total = sum(sum(row) for row in cells)
    busiest = max(
        ((row, hour) for row in range(len(cells)) for hour in range(len(cells[row]))),
        key=lambda at: cells[at[0]][at[1]],
    )
    label = (
        f"Messages by weekday and hour, local time: {_plural(total, 'message')}; the busiest "
        f"hour is {DAYS[busiest[0]]} {busiest[1]:02d}:00 with {peak:,}."
    )
    width, height = LABEL_WIDTH + 24 * CELL, 7 * CELL + HOURS_HEIGHT
    legend = format_html_join(
        "", '<span class="swatch l{}" title="{}"></span>', ((n, n) for n in range(5))
    )
    return format_html(
        '<figure class="stats-chart heatmap-chart"><svg class="heatmap" viewBox="0 0 {} {}"'
        ' role="img" aria-label="{}">{}{}{}</svg><figcaption><span>Local time</span>'
        '<span class="scale">None {} {}</span></figcaption></figure>',
        width,
        height,
        label,
        days,
        hours,
        rects,
        legend,
        f"{peak:,} an hour",
    )


def _scale(values: list[float]) -> tuple[float, float, list[tuple[float, str]]]:
    """A log scale for these durations: from the round tick at or below the least to the
    one at or above the most, and the ticks in between."""
    low = min(values)
    high = max(values)
    seconds = [tick for tick, _ in DURATION_TICKS]
    bottom = max([tick for tick in seconds if tick <= low] or [seconds[0]])
    top = min([tick for tick in seconds if tick >= high] or [seconds[-1]])
    if top <= bottom:
        top = min([tick for tick in seconds if tick > bottom] or [bottom * 10])
    span = PLOT_HEIGHT - PLOT_TOP
    ratio = math.log(top / bottom)

    def y(value: float) -> float:
        clamped = min(max(value, bottom), top)
        return PLOT_HEIGHT - math.log(clamped / bottom) / ratio * span

    ticks = [(y(tick), words) for tick, words in DURATION_TICKS if bottom <= tick <= top]
    return bottom, top, [(round(at, 2), words) for at, words in ticks]


@register.simple_tag
def response_chart(
    rows: Sequence[tuple[date, float | None, float | None, int]], unit: str = "month"
) -> SafeString:
    """The owner's response times per bucket on a log scale: a pale bar up to the p90 and a
    solid one up to the median; a bucket without answers is left empty."""
    known = [(start, median, p90, n) for start, median, p90, n in rows if median is not None]
    if not known:
        return _empty("No answers of yours in this range to time.")
    values = [v for _, median, p90, _ in known for v in (median, p90) if v is not None]
    bottom, top, rules = _scale([max(v, 1.0) for v in values])
    span = PLOT_HEIGHT - PLOT_TOP
    ratio = math.log(top / bottom)

    def height(value: float | None) -> float:
        if value is None:
            return 0.0
        clamped = min(max(value, bottom), top)
        return max(math.log(clamped / bottom) / ratio * span, 2.0)

    step = PLOT_WIDTH / len(rows)
    bar = max(step * 0.7, min(step, 1.0))

    def one(
        i: int, start: date, median: float | None, p90: float | None, n: int
    ) -> tuple[object, ...]:
        x = i * step + (step - bar) / 2
        high, mid = height(p90), height(median)
        words = (
            f"{bucket_name(start, unit)}: median {duration(median)}, p90 {duration(p90)}, "
            f"{_plural(n, 'answer')}"
        )
        return (
            words,
            f"{x:.2f}",
            f"{PLOT_HEIGHT - high:.2f}",
            f"{bar:.2f}",
            f"{high:.2f}",
            f"{x:.2f}",
            f"{PLOT_HEIGHT - mid:.2f}",
            f"{bar:.2f}",
            f"{mid:.2f}",
        )

    bars = format_html_join(
        "",
        '<g class="bucket"><title>{}</title><rect class="p90" x="{}" y="{}" width="{}" height="{}">'
        '</rect><rect class="median" x="{}" y="{}" width="{}" height="{}"></rect></g>',
        (
            one(i, start, median, p90, n)
            for i, (start, median, p90, n) in enumerate(rows)
            if median is not None
        ),
    )
    first, last = _edge(rows[0][0], unit), _edge(rows[-1][0], unit)
    label = (
        f"Your response times per {unit}, {first} to {last}, on a log scale from "
        f"{duration(bottom)} to {duration(top)}: median and p90 of each {unit}."
    )
    return format_html(
        '<figure class="stats-chart response-chart" data-unit="{}">{}'
        '<figcaption><span class="edge">{}</span><span class="legend">'
        '<span class="key key-median">Median</span><span class="key key-p90">p90</span></span>'
        '<span class="edge">{}</span></figcaption></figure>',
        unit,
        _plot(bars, rules, label),
        first,
        last,
    )


@register.simple_tag
def share_bar(count: int, sent: int, peak: int, name: str = "") -> SafeString:
    """One horizontal bar of a top list: `count` against the list's `peak`, the owner's
    `sent` part in its own colour; its label and tooltip say whose and the numbers."""
    if peak <= 0:
        return mark_safe("")
    whole = max(count / peak * 100, 0.5 if count else 0)
    own = min(sent, count) / peak * 100
    words = _plural(count, "message") + (f", {sent:,} yours" if sent else "")
    if name:
        words = f"{name}: {words}"
    return format_html(
        '<svg class="hbar" viewBox="0 0 100 10" preserveAspectRatio="none" role="img"'
        ' aria-label="{}"><title>{}</title><rect class="track" x="0" y="0" width="100"'
        ' height="10"></rect><rect class="in" x="0" y="0" width="{}" height="10"></rect>'
        '<rect class="out" x="0" y="0" width="{}" height="10"></rect></svg>',
        words,
        words,
        f"{whole:.2f}",
        f"{own:.2f}",
    )
