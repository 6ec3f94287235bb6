"""The Statistics page: messages over time, the hour-of-week heatmap, top chats and people,
messages left unanswered and the owner's response times, over the whole store or one
account, chat or person, for a range of days.

Everything the page shows is in its address (a GET form; presets are links), so a view can
be bookmarked and works without JavaScript (one answer with every section); htmx swaps the
page's body in place and pushes the address. That body is a frame answered at once (the
filter, placeholders for the headline numbers and the sections); each section then asks
for itself (`?section=<name>`, its own request, so the workers' threads count them side
by side) and brings its headline numbers out of band. Bad input (a date that is not one,
until before since, a chat that does not exist, a section that is none) is said next to
the filter, or in the section's place, with the error's status, never a 500."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date, timedelta
from urllib.parse import urlencode

from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from archive.stats.selectors import (
    UNITS,
    StatsScope,
    heatmap,
    response_times,
    stats_scope,
    top_chats,
    top_people,
    unanswered,
    volume,
)
from archive.store.models import Account, Chat, Message
from archive.templatetags.wirecat_stats_charts import DAYS
from archive.web.pages import HtmxHttpRequest
from wirecat.errors import Invalid, WireCatError

# Ranges offered as links: (key, words, days; None for everything since the first message).
PRESETS: tuple[tuple[str, str, int | None], ...] = (
    ("30d", "30 days", 30),
    ("90d", "90 days", 90),
    ("365d", "A year", 365),
    ("all", "All time", None),
)
DEFAULT_PRESET = "365d"
# How long the owner may take before a message counts as unanswered.
WITHIN: tuple[tuple[str, str, timedelta], ...] = (
    ("4h", "4 hours", timedelta(hours=4)),
    ("1d", "1 day", timedelta(days=1)),
    ("2d", "2 days", timedelta(days=2)),
    ("7d", "A week", timedelta(days=7)),
)
DEFAULT_WITHIN = "2d"
UNIT_LABELS = {"day": "Day", "week": "Week", "month": "Month"}
MAX_YEARS = 20  # the longest range the statistics accept
MAX_BUCKETS = 400  # more bars than this and the unit is made coarser
SCOPE_KINDS = ("account", "chat", "person")
CHAT_CHOICES = 30  # the biggest chats offered in the scope menu


@dataclass
class Filter:
    """What the address asks for, read and checked: the days (both included), the preset
    they are, the unit (and why it was made coarser), `within` and the scope's ids."""

    since: date
    until: date
    preset: str  # the preset these dates are ("" when none)
    unit: str
    unit_note: str
    within: str
    ids: dict[str, int] = field(default_factory=dict)  # account / chat / person


def _first_day(today: date) -> date:
    """The local day of the first message (today for an empty store), no earlier than the
    longest range allows."""
    first = Message.objects.order_by("sent_at").values_list("sent_at", flat=True).first()
    floor = _years_before(today, MAX_YEARS) + timedelta(days=1)
    if first is None:
        return today
    return max(timezone.localtime(first).date(), floor)


def _years_before(day: date, years: int) -> date:
    try:
        return day.replace(year=day.year - years)
    except ValueError:  # 29 February
        return day.replace(year=day.year - years, day=28)


def _days_before(day: date, days: int) -> date:
    try:
        return day - timedelta(days=days)
    except OverflowError:
        raise Invalid(f"until: {day.isoformat()} is too early") from None


def _preset_range(key: str, today: date) -> tuple[date, date]:
    days = dict((k, n) for k, _, n in PRESETS)[key]
    since = _first_day(today) if days is None else today - timedelta(days=days - 1)
    return since, today


def _date(raw: str, name: str) -> date:
    try:
        return date.fromisoformat(raw[:40])
    except ValueError:
        raise Invalid(f"{name}: not a date (YYYY-MM-DD): {raw[:40]!r}") from None


def _id(raw: str, name: str) -> int:
    if not raw.isdigit() or len(raw) > 18:
        raise Invalid(f"{name}: not an id: {raw[:40]!r}")
    return int(raw)


def _auto_unit(days: int) -> str:
    return "day" if days <= 62 else "week" if days <= 3 * 366 else "month"


def _buckets(since: date, until: date, unit: str) -> int:
    days = (until - since).days + 1
    return days if unit == "day" else days // 7 + 1 if unit == "week" else days // 30 + 1


def read_filter(query: QueryDict, today: date) -> Filter:
    """The filter the address asks for. Dates given win over a preset; with neither, the
    last year. Invalid names the field that is wrong."""
    raw_since, raw_until = query.get("since", "").strip(), query.get("until", "").strip()
    key = query.get("range", "").strip()
    if key and key not in {k for k, _, _ in PRESETS}:
        raise Invalid(f"range: one of {', '.join(k for k, _, _ in PRESETS)}, not {key[:20]!r}")
    if raw_since or raw_until:
        until = _date(raw_until, "until") if raw_until else today
        since = _date(raw_since, "since") if raw_since else _days_before(until, 364)
    else:
        since, until = _preset_range(key or DEFAULT_PRESET, today)
    if until < since:
        raise Invalid(f"until: {until.isoformat()} is before since ({since.isoformat()})")
    preset = next((k for k, _, _ in PRESETS if (since, until) == _preset_range(k, today)), "")
    unit = query.get("unit", "").strip()
    if unit and unit not in UNITS:
        raise Invalid(f"unit: one of {', '.join(UNITS)}, not {unit[:20]!r}")
    unit = unit or _auto_unit((until - since).days + 1)
    note = ""
    while unit != "month" and _buckets(since, until, unit) > MAX_BUCKETS:
        coarser = UNITS[UNITS.index(unit) + 1]
        note = f"Too many {unit}s to draw for this range: shown by {coarser}."
        unit = coarser
    within = query.get("within", "").strip() or DEFAULT_WITHIN
    if within not in {k for k, _, _ in WITHIN}:
        raise Invalid(f"within: one of {', '.join(k for k, _, _ in WITHIN)}, not {within[:20]!r}")
    ids: dict[str, int] = {}
    picked = query.get("scope", "").strip()
    if picked:
        kind, _, raw = picked.partition(":")
        if kind not in SCOPE_KINDS:
            raise Invalid(f"scope: an account, chat or person, not {picked[:40]!r}")
        ids[kind] = _id(raw, kind)
    for kind in SCOPE_KINDS:
        raw = query.get(kind, "").strip()
        if raw and kind not in ids:
            ids[kind] = _id(raw, kind)
    return Filter(since, until, preset, unit, note, within, ids)


def address(filt: Filter, **change: str) -> str:
    """The page's address for this filter (a preset by its key), with `change` applied;
    an empty value drops its key."""
    params: dict[str, str] = {}
    if filt.preset:
        params["range"] = filt.preset
    else:
        params["since"], params["until"] = filt.since.isoformat(), filt.until.isoformat()
    params["unit"] = filt.unit
    for kind, pk in filt.ids.items():
        params[kind] = str(pk)
    if filt.within != DEFAULT_WITHIN:
        params["within"] = filt.within
    if "range" in change:
        params.pop("since", None)
        params.pop("until", None)
        params.pop("unit", None)  # each range its own unit
    params.update(change)
    kept = {k: v for k, v in params.items() if v}
    return reverse("archive:stats") + ("?" + urlencode(kept) if kept else "")


@dataclass(frozen=True)
class Choice:
    value: str
    label: str


def scope_choices(scope: StatsScope | None) -> list[tuple[str, list[Choice]]]:
    """The scope menu's accounts and biggest chats (any other chat is reached from its own
    page's Statistics link); the current one always among them."""
    accounts = [
        Choice(f"account:{a.pk}", f"{a.name or a.external_id} ({a.provider})")
        for a in Account.objects.order_by("provider", "name", "pk")[:50]
    ]
    chats = list(Chat.objects.order_by("-message_count", "pk")[:CHAT_CHOICES])
    if scope is not None and scope.chat is not None and scope.chat not in chats:
        chats.insert(0, scope.chat)
    groups = [
        ("Accounts", accounts),
        ("Chats", [Choice(f"chat:{c.pk}", c.title or c.external_id) for c in chats]),
    ]
    return [(name, rows) for name, rows in groups if rows]


def people_choices(scope: StatsScope | None, people: list[tuple[int, str]]) -> list[Choice]:
    """The scope menu's people: those in the Top people section (it sends them along),
    the current one always among them."""
    folks = dict(people)
    if scope is not None and scope.person is not None:
        folks.setdefault(scope.person.pk, scope.person.name)
    return [
        Choice(f"person:{pk}", name)
        for pk, name in sorted(folks.items(), key=lambda i: i[1].lower())
    ]


# The page's sections, each its own request once the page is shown (`?section=`).
SECTIONS = ("volume", "chats", "people", "heatmap", "responses", "waiting")
# The headline numbers (id, words); each comes with the section it is drawn from.
KPIS = (
    ("messages", "Messages"),
    ("yours", "Yours"),
    ("waiting", "Waiting on you"),
    ("median", "Median reply"),
    ("p90", "p90 reply"),
)


def _section(name: str, scope: StatsScope, filt: Filter) -> dict[str, object]:
    """What section `name` shows, from its own selectors only; the headline numbers and
    the scope menu's people come with the section they are drawn from."""
    if name == "volume":
        series = volume(scope, filt.unit)
        return {"volume": series, "sent_buckets": series.sent_buckets}
    if name == "chats":
        chats = [] if scope.chat is not None else top_chats(scope)
        return {"chats": chats, "chats_peak": max((row.count for row in chats), default=0)}
    if name == "people":
        folks = [] if scope.person is not None else top_people(scope)
        people = [(row.id, row.name) for row in folks if row.kind == "person"]
        return {
            "people": folks,
            "people_peak": max((row.count for row in folks), default=0),
            "people_choices": people_choices(scope, people),
        }
    if name == "heatmap":
        heat = heatmap(scope)
        return {
            "heat": heat,
            "heat_rows": [(hour, [row[hour] for row in heat.cells]) for hour in range(24)],
            "day_names": [day[:3] for day in DAYS],
        }
    if name == "responses":
        responses = response_times(scope, filt.unit)
        return {
            "responses": responses,
            "response_groups": [
                ("By chat", [] if scope.chat is not None else responses.by_chat, "chat"),
                ("By person", [] if scope.person is not None else responses.by_person, "person"),
            ],
        }
    within = dict((k, d) for k, _, d in WITHIN)[filt.within]
    return {"waiting": unanswered(scope, within=within)}


@require_GET
@vary_on_headers("HX-Request")
def stats_page(request: HtmxHttpRequest) -> HttpResponse:
    """The Statistics page for the address's filter. Without JavaScript it is one answer
    with every section; htmx asks for its body (the filter and the headline numbers'
    frame) and then each section on its own (`?section=`, in parallel), so the page is
    shown at once and fills itself in."""
    today = timezone.localdate()
    section = request.GET.get("section")
    context: dict[str, object] = {
        "presets": PRESETS,
        "withins": WITHIN,
        "units": [(u, UNIT_LABELS[u]) for u in UNITS],
    }
    status = 200
    filt: Filter | None = None
    scope: StatsScope | None = None
    try:
        if section is not None and section not in SECTIONS:
            raise Invalid(f"section: one of {', '.join(SECTIONS)}, not {section[:20]!r}")
        filt = read_filter(request.GET, today)
        scope = stats_scope(
            since=filt.since,
            until=filt.until,
            account=filt.ids.get("account"),
            chat=filt.ids.get("chat"),
            person=filt.ids.get("person"),
        )
    except WireCatError as exc:
        context["problem"] = str(exc)
        status = exc.http_status
    if filt is None:
        raw = request.GET
        context["raw"] = {k: raw.get(k, "")[:40] for k in ("since", "until", "unit", "within")}
        context["scope_value"] = raw.get("scope", "")[:40]
    else:
        context["filter"] = filt
        context["preset_links"] = [
            (key, words, address(filt, range=key), key == filt.preset) for key, words, _ in PRESETS
        ]
        context["scope_value"] = next((f"{k}:{v}" for k, v in filt.ids.items()), "")
        context["within_words"] = dict((k, w) for k, w, _ in WITHIN)[filt.within].lower()
        # Out-of-band ids carry the filter, so a section asked for by a page that was
        # since swapped for another filter never writes its numbers into the new one.
        context["key"] = hashlib.blake2s(address(filt).encode(), digest_size=5).hexdigest()
    if section is not None:  # one section, its headline numbers swapped in out of band
        if scope is None or filt is None:
            return render(request, "archive/stats.html#section_problem", context, status=status)
        context.update(scope=scope, oob=True, **_section(section, scope, filt))
        return render(request, f"archive/stats.html#section_{section}", context)
    lazy = bool(request.htmx)
    if scope is not None and filt is not None:
        context.update(scope=scope, described=scope.describe(), lazy=lazy)
        if lazy:
            context["section_urls"] = {name: address(filt, section=name) for name in SECTIONS}
            context["kpi_names"] = KPIS
        else:
            for name in SECTIONS:
                context.update(_section(name, scope, filt))
    context["scope_groups"] = scope_choices(scope)
    context.setdefault("people_choices", people_choices(scope, []))
    template = "archive/stats.html#stats" if request.htmx else "archive/stats.html"
    response = render(request, template, context, status=status)
    if request.htmx and filt is not None and status == 200:
        response["HX-Push-Url"] = address(filt)
    return response
