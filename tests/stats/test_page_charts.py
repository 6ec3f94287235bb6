"""The Statistics page's chart tags on plain numbers: durations in words, the empty and
all-zero cases (no division by zero), bars scaled to a round top, the heatmap's shades,
the response times' log scale."""

from __future__ import annotations

import re
from datetime import date

from archive.templatetags.wirecat_stats_charts import (
    duration,
    heatmap_chart,
    response_chart,
    share_bar,
    volume_chart,
)


def test_durations_read_as_people_say_them() -> None:
    assert [duration(s) for s in (None, 0, 44.6, 59.4, 180, 3599, 5400, 7200, 36000, 86400)] == [
        "-",
        "0 s",
        "45 s",
        "59 s",
        "3 min",
        "60 min",
        "1.5 h",
        "2 h",
        "10 h",
        "1 day",
    ]
    assert duration(1.5 * 86400) == "1.5 days"
    assert duration(12 * 86400) == "12 days"


def test_empty_and_all_zero_series_draw_a_sentence() -> None:
    assert "No messages in this range." in volume_chart([], None, "week")
    assert "No messages in this range." in volume_chart([(date(2024, 1, 1), 0)], [], "day")
    assert "No messages in this range." in heatmap_chart([[0] * 24 for _ in range(7)], 0)
    assert "No answers of yours" in response_chart([(date(2024, 1, 1), None, None, 0)])
    assert str(share_bar(0, 0, 0)) == ""


def test_volume_bars_stack_the_owners_part_under_a_round_top() -> None:
    weeks = [(date(2024, 1, 1), 30), (date(2024, 1, 8), 0), (date(2024, 1, 15), 70)]
    svg = str(volume_chart(weeks, [(date(2024, 1, 1), 10)], "week"))
    assert svg.count('<g class="bucket">') == 3
    assert "<title>week of 1 Jan 2024: 30 messages, 10 yours</title>" in svg
    assert "<title>week of 8 Jan 2024: 0 messages, 0 yours</title>" in svg
    # the rules: 100 (the round top above 70) and its half
    assert re.findall(r'<text class="tick"[^>]*>([^<]+)</text>', svg) == ["100", "50"]
    assert (
        'aria-label="Messages per week, 1 Jan 2024 to 15 Jan 2024: 100 messages, 10 of them yours'
        in svg
    )
    heights = [float(h) for h in re.findall(r'<rect class="in"[^>]*height="([\d.]+)"', svg)]
    # 168 px from the top rule to the foot: 30 of 100 is 50.4 high, less the owner's 16.8
    assert heights == [33.6, 0.0, 117.6]


def test_heatmap_shades_and_labels() -> None:
    cells = [[0] * 24 for _ in range(7)]
    cells[0][9] = 8
    cells[6][23] = 1
    svg = str(heatmap_chart(cells, 8))
    assert svg.count("<rect ") == 168
    assert '<rect class="l4"' in svg and "<title>Monday 09:00-10:00: 8 messages</title>" in svg
    assert "<title>Sunday 23:00-00:00: 1 message</title>" in svg
    assert re.findall(r'<text class="day" [^>]*>(\w+)</text>', svg) == [
        "Mon",
        "Tue",
        "Wed",
        "Thu",
        "Fri",
        "Sat",
        "Sun",
    ]
    assert "the busiest hour is Monday 09:00 with 8" in svg


def test_response_times_on_a_log_scale_with_round_rules() -> None:
    rows = [
        (date(2024, 1, 1), 180.0, 7200.0, 12),
        (date(2024, 2, 1), None, None, 0),
        (date(2024, 3, 1), 30.0, 600.0, 3),
    ]
    svg = str(response_chart(rows, "month"))
    assert svg.count('<g class="bucket">') == 2  # February had no answers
    assert "<title>January 2024: median 3 min, p90 2 h, 12 answers</title>" in svg
    assert re.findall(r'<text class="tick"[^>]*>([^<]+)</text>', svg) == [
        "10 s",
        "1 min",
        "10 min",
        "1 h",
        "6 h",
    ]
    assert "on a log scale from 10 s to 6 h" in svg
