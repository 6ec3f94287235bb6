"""The statistics API: messages over time, the hour-of-week heatmap, top chats and people,
unanswered messages and response times, each over the whole store or one account, chat or
person, for a range of local days (scope `stats.read`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from django.conf import settings
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from archive.gateway.selectors import agent_chat_check, agent_limits
from archive.stats.schemas import (
    BucketOut,
    HeatmapOut,
    ResponsePointOut,
    ResponseRowOut,
    ResponsesOut,
    ScopeOut,
    TopOut,
    TopsOut,
    UnansweredOut,
    UnansweredPageOut,
    VolumeOut,
)
from archive.stats.selectors import (
    MOST_MAX,
    UNITS,
    ResponseRow,
    StatsScope,
    Top,
    heatmap,
    response_times,
    stats_scope,
    top_chats,
    top_people,
    unanswered,
    volume,
)
from archive.web.api import answers, caller_agent, requires, scope
from archive.web.schemas import Choice, Day, Id
from wirecat.errors import Forbidden

router = Router(tags=["stats"])

SCOPE = "stats.read"
RANGE = (
    "local days (WIRECAT_TIME_ZONE), both included; by default the last 365 days. A range"
    " over 20 years is cut to the 20 years up to `until`, days are kept within 1970-01-01"
    " to 2999-12-31, and `until` before `since` is an empty range: the answer's `scope`"
    " says what was answered"
)


def _scope(request: HttpRequest, where: Where) -> StatsScope:
    """The scope asked for. An agent limited to some accounts or chats must name one of
    them (`chat`, or `account`): its numbers never count what it may not see."""
    found = stats_scope(
        since=where.since,
        until=where.until,
        account=where.account,
        chat=where.chat,
        person=where.person,
        cut=True,
    )
    agent = caller_agent(request)
    limits = agent_limits(agent)
    if limits is not None:
        if found.chat is not None:
            agent_chat_check(agent, found.chat, f"chat: no chat {where.chat}")
        elif found.account is None or found.account.pk not in limits.accounts:
            raise Forbidden(
                "chat: this agent sees only some chats; name one of them (chat) or one of"
                " its accounts (account)"
            )
    return found


def _scope_out(found: StatsScope) -> ScopeOut:
    return ScopeOut(
        since=found.first_day,
        until=found.last_day,
        time_zone=settings.TIME_ZONE,
        account=found.account.pk if found.account else None,
        chat=found.chat.pk if found.chat else None,
        person=found.person.pk if found.person else None,
        described=found.describe(),
    )


def _top(row: Top) -> TopOut:
    return TopOut(kind=row.kind, id=row.id, name=row.name, count=row.count, sent=row.sent)


def _row(row: ResponseRow) -> ResponseRowOut:
    return ResponseRowOut(
        kind=row.kind, id=row.id, name=row.name, count=row.count, median=row.median, p90=row.p90
    )


class Where(Schema):
    """The query parameters every statistic takes: the range and what it is about."""

    since: Day | None = Field(None, description=f"the first day: {RANGE}")
    until: Day | None = Field(None, description="the last day (default today)")
    account: Id | None = Field(None, description="only this account's chats")
    chat: Id | None = Field(None, description="only this chat")
    person: Id | None = Field(None, description="only this person's messages")


@router.get(
    "/stats/volume",
    response=answers(VolumeOut),
    summary="Messages per day, week or month",
    **scope(SCOPE),
)
@requires(SCOPE)
def stats_volume(
    request: HttpRequest,
    where: Query[Where],
    unit: Annotated[str, Choice("unit", UNITS)] = Query(
        "week", description="day, week (from Monday) or month"
    ),
) -> VolumeOut:
    """Messages (not tombstoned, not service events) per local day, week or month: every
    bucket of the range, zeros included; `sent` counts the owner's own."""
    found = _scope(request, where)
    made = volume(found, unit)
    return VolumeOut(
        scope=_scope_out(found),
        unit=made.unit,
        buckets=[BucketOut(start=day, count=count) for day, count in made.buckets],
        total=made.total,
        sent=made.sent,
    )


@router.get(
    "/stats/heatmap",
    response=answers(HeatmapOut),
    summary="Messages by hour of the week",
    **scope(SCOPE),
)
@requires(SCOPE)
def stats_heatmap(
    request: HttpRequest,
    where: Query[Where],
) -> HeatmapOut:
    """Messages by local weekday (7 rows, Monday first) and hour (24 columns); messages
    whose date is an estimate are left out."""
    found = _scope(request, where)
    made = heatmap(found)
    return HeatmapOut(scope=_scope_out(found), cells=made.cells, peak=made.peak, total=made.total)


@router.get(
    "/stats/top",
    response=answers(TopsOut),
    summary="The chats and people with the most messages",
    **scope(SCOPE),
)
@requires(SCOPE)
def stats_top(
    request: HttpRequest,
    where: Query[Where],
    most: int = Query(10, ge=1, le=MOST_MAX, description=f"how many of each, 1 to {MOST_MAX}"),
) -> TopsOut:
    """The chats with the most messages (`sent`: the owner's there) and the people other
    than the owner who wrote the most (`sent`: the owner's messages in direct chats with
    them); someone no person holds yet is listed by identity (`kind` "identity")."""
    found = _scope(request, where)
    return TopsOut(
        scope=_scope_out(found),
        chats=[_top(row) for row in top_chats(found, most)],
        people=[_top(row) for row in top_people(found, most)],
    )


@router.get(
    "/stats/unanswered",
    response=answers(UnansweredPageOut),
    summary="Messages to the owner left unanswered",
    **scope(SCOPE),
)
@requires(SCOPE)
def stats_unanswered(
    request: HttpRequest,
    where: Query[Where],
    within: int = Query(48, ge=1, le=720, description="hours an answer had, 1 to 720"),
    most: int = Query(50, ge=1, le=MOST_MAX, description=f"how many, 1 to {MOST_MAX}"),
) -> UnansweredPageOut:
    """Messages to the owner (in a direct chat, mentioning the owner, or asking a question
    with "?") the owner did not answer in that chat within `within` hours, newest first:
    one per run of messages between two of the owner's, its newest waiting message, with
    how many were `waiting`. Messages whose `within` has not passed yet are not judged."""
    found = _scope(request, where)
    page = unanswered(found, timedelta(hours=within), most)
    return UnansweredPageOut(
        scope=_scope_out(found),
        within_hours=within,
        total=page.total,
        items=[
            UnansweredOut(
                message_id=item.public_id,
                chat_id=item.chat_id,
                chat_title=item.chat_title,
                sender=item.sender,
                sent_at=item.sent_at,
                text=item.text,
                why=item.why,
                waiting=item.waiting,
            )
            for item in page.items
        ],
    )


@router.get(
    "/stats/responses",
    response=answers(ResponsesOut),
    summary="The owner's response times",
    **scope(SCOPE),
)
@requires(SCOPE)
def stats_responses(
    request: HttpRequest,
    where: Query[Where],
    unit: Annotated[str, Choice("unit", UNITS)] = Query(
        "month", description="the buckets of `over_time`: day, week or month"
    ),
) -> ResponsesOut:
    """How long the owner took to answer, in seconds (median and 90th percentile): from
    the first message to the owner not answered yet to the owner's next message in that
    chat; overall, per chat, per person (who wrote that first message) and per `unit`."""
    found = _scope(request, where)
    made = response_times(found, unit)
    return ResponsesOut(
        scope=_scope_out(found),
        count=made.count,
        median=made.median,
        p90=made.p90,
        by_chat=[_row(row) for row in made.by_chat],
        by_person=[_row(row) for row in made.by_person],
        over_time=[
            ResponsePointOut(start=day, median=median, p90=p90, count=count)
            for day, median, p90, count in made.over_time
        ],
    )
