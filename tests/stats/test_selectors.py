"""The statistics' numbers on a small hand-made store (tests/stats/store.py), each worked
out by hand: volume with its zero buckets, the heatmap in local time, top chats and
people, unanswered messages (in time, late, never; a mention, a question, a direct
message; tombstones and service events not counted) and response times."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest

from archive.stats.selectors import (
    heatmap,
    response_times,
    stats_scope,
    top_chats,
    top_people,
    unanswered,
    volume,
)
from archive.store.models import Message
from tests.stats.store import stats_store
from wirecat.errors import Invalid, NotFound

pytestmark = pytest.mark.django_db

MARCH: dict[str, Any] = {"since": date(2024, 3, 1), "until": date(2024, 3, 10)}


@pytest.fixture
def berlin(settings: Any) -> None:
    settings.TIME_ZONE = "Europe/Berlin"  # UTC+1 in early March


@pytest.fixture
def store(berlin: None) -> dict[str, Any]:
    return stats_store()


def test_volume_counts_every_local_day_zeros_included(store: dict[str, Any]) -> None:
    """14 counted messages (the tombstone and the service event are not), 5 the owner's.
    g3 (23:30 UTC on the 2nd) is the 3rd in Berlin; nothing on the 10th."""
    made = volume(stats_scope(**MARCH), "day")
    assert made.total == 14
    assert made.sent == 5
    assert made.buckets == [
        (date(2024, 3, day), count)
        for day, count in zip(range(1, 11), [3, 2, 2, 2, 1, 1, 1, 1, 1, 0], strict=True)
    ]
    assert made.sent_buckets == [  # g0 do1 on the 1st, g2 the 2nd, g6 the 6th, do2 the 9th
        (date(2024, 3, day), count)
        for day, count in zip(range(1, 11), [2, 1, 0, 0, 0, 1, 0, 0, 1, 0], strict=True)
    ]


def test_volume_by_week_starts_on_monday_and_keeps_empty_weeks(store: dict[str, Any]) -> None:
    made = volume(stats_scope(since=date(2024, 2, 20), until=date(2024, 3, 10)), "week")
    assert made.buckets == [(date(2024, 2, 19), 0), (date(2024, 2, 26), 7), (date(2024, 3, 4), 7)]
    monthly = volume(stats_scope(since=date(2024, 1, 15), until=date(2024, 3, 10)), "month")
    assert monthly.buckets == [(date(2024, 1, 1), 0), (date(2024, 2, 1), 0), (date(2024, 3, 1), 14)]


def test_volume_of_one_chat_and_of_one_person(store: dict[str, Any]) -> None:
    dm = volume(stats_scope(**MARCH, chat=store["dm"].pk), "week")
    assert (dm.total, dm.sent) == (5, 2)
    alice = volume(stats_scope(**MARCH, person=store["alice"].pk), "week")
    assert (alice.total, alice.sent) == (6, 0)  # d1 d2 d3 g3 g5 e1
    mine = volume(stats_scope(**MARCH, person=store["owner"].pk), "week")
    assert (mine.total, mine.sent) == (5, 5)


def test_heatmap_is_in_local_time_and_leaves_estimated_dates_out(store: dict[str, Any]) -> None:
    made = heatmap(stats_scope(**MARCH))
    expected = [[0] * 24 for _ in range(7)]
    for weekday, hour, count in [
        (0, 13, 2),  # Mon 4th: d2 d3
        (1, 13, 1),  # Tue: g5
        (2, 13, 1),  # Wed: g6
        (4, 13, 2),  # Fri 1st and 8th: g0 g7
        (4, 14, 1),  # d1
        (4, 15, 1),  # do1
        (5, 13, 3),  # Sat 2nd and 9th: g1 g2 do2
        (6, 0, 1),  # Sun 00:30: g3
        (6, 14, 1),  # g4
    ]:
        expected[weekday][hour] = count
    assert made.cells == expected
    assert (made.peak, made.total) == (3, 13)  # e1's date is an estimate


def test_top_chats_and_people(store: dict[str, Any]) -> None:
    scope = stats_scope(**MARCH)
    chats = [(t.kind, t.id, t.name, t.count, t.sent) for t in top_chats(scope)]
    assert chats == [
        ("chat", store["grp"].pk, "The group", 9, 3),
        ("chat", store["dm"].pk, "Alice", 5, 2),
    ]
    people = [(t.kind, t.id, t.name, t.count, t.sent) for t in top_people(scope)]
    assert people == [
        ("person", store["alice"].pk, "Alice", 6, 2),  # the owner's 2 in the direct chat
        ("identity", store["bob"].pk, "Bob B", 3, 0),  # no person holds Bob yet
    ]
    assert [t.name for t in top_people(scope, most=1)] == ["Alice"]


def test_unanswered_lists_each_waiting_run_newest_first(store: dict[str, Any]) -> None:
    """d1 (1 h), g1 (30 min) and g5 (1 day) were answered in time; d2 and d3 waited 5
    days (one run: d3 shown, 2 waiting); g4 (a mention) waited 2 d 23 h; g7 never got an
    answer. g8 (tombstoned) would have been newer than g7 in its run."""
    page = unanswered(stats_scope(**MARCH), within=timedelta(days=2))
    ids = {m.pk: m.external_id for m in Message.objects.all()}
    got = [(ids[i.message_id], i.why, i.waiting) for i in page.items]
    assert got == [("g7", "question", 1), ("d3", "direct message", 2), ("g4", "mention", 1)]
    assert page.total == 3
    first = page.items[0]
    assert (first.chat_title, first.sender, first.text) == ("The group", "Bob B", "is it done?")
    assert first.public_id == Message.objects.get(external_id="g7").public_id


def test_unanswered_within_a_longer_time_and_for_one_person(store: dict[str, Any]) -> None:
    scope = stats_scope(**MARCH)
    longer = unanswered(scope, within=timedelta(hours=72))  # g4's answer now came in time
    ids = {m.pk: m.external_id for m in Message.objects.all()}
    assert [ids[i.message_id] for i in longer.items] == ["g7", "d3"]
    assert [ids[i.message_id] for i in unanswered(scope, most=1).items] == ["g7"]
    assert unanswered(scope, most=1).total == 3
    alice = unanswered(stats_scope(**MARCH, person=store["alice"].pk))
    assert [ids[i.message_id] for i in alice.items] == ["d3"]


def test_response_times_median_and_p90(store: dict[str, Any]) -> None:
    """Answered runs, from their first message to the owner: g1 1800 s, d1 3600 s, g4
    255600 s (g5 in its run came later), d2 432000 s (d3 later). Median (3600 + 255600)
    / 2; p90 the value at rank ceil(0.9 * 4) = 4."""
    made = response_times(stats_scope(**MARCH), "week")
    assert (made.count, made.median, made.p90) == (4, 129600.0, 432000.0)
    chats = [(r.kind, r.id, r.count, r.median, r.p90) for r in made.by_chat]
    assert sorted(chats) == sorted(
        [
            ("chat", store["dm"].pk, 2, 217800.0, 432000.0),
            ("chat", store["grp"].pk, 2, 128700.0, 255600.0),
        ]
    )
    people = [(r.kind, r.id, r.count, r.median) for r in made.by_person]
    assert sorted(people) == [
        ("identity", store["bob"].pk, 2, 128700.0),
        ("person", store["alice"].pk, 2, 217800.0),
    ]
    assert made.over_time == [
        (date(2024, 2, 26), 3600.0, 255600.0, 3),  # d1, g1, g4
        (date(2024, 3, 4), 432000.0, 432000.0, 1),  # d2
    ]


def test_an_empty_scope_has_zeros_and_no_times(store: dict[str, Any]) -> None:
    scope = stats_scope(since=date(2023, 1, 1), until=date(2023, 1, 31))
    assert volume(scope, "month").buckets == [(date(2023, 1, 1), 0)]
    assert heatmap(scope).peak == 0
    assert top_chats(scope) == [] and top_people(scope) == []
    assert unanswered(scope).total == 0
    made = response_times(scope)
    assert (made.count, made.median, made.p90) == (0, None, None)


def test_the_default_scope_is_the_last_365_days(berlin: None) -> None:
    scope = stats_scope()
    assert (scope.last_day - scope.first_day).days == 364
    assert scope.describe().startswith("all chats, ")


@pytest.mark.parametrize(
    ("asked", "error", "field"),
    [
        ({"since": date(2024, 3, 5), "until": date(2024, 3, 1)}, Invalid, "until"),
        ({"since": date(1990, 1, 1), "until": date(2024, 3, 1)}, Invalid, "since"),
        ({"since": date(1, 1, 1)}, Invalid, "since"),
        ({"until": date(9999, 12, 31)}, Invalid, "until"),
        ({"chat": 999_999}, NotFound, "chat"),
        ({"account": 999_999}, NotFound, "account"),
        ({"person": 999_999}, NotFound, "person"),
    ],
)
def test_bad_scopes_name_the_field(
    store: dict[str, Any], asked: dict[str, Any], error: type[Exception], field: str
) -> None:
    with pytest.raises(error, match=rf"^{field}: "):
        stats_scope(**asked)


def test_bad_units_counts_and_times_are_refused(store: dict[str, Any]) -> None:
    scope = stats_scope(**MARCH)
    with pytest.raises(Invalid, match=r"^unit: "):
        volume(scope, "year")
    with pytest.raises(Invalid, match=r"^most: "):
        top_chats(scope, most=0)
    with pytest.raises(Invalid, match=r"^within: "):
        unanswered(scope, within=timedelta(days=31))
