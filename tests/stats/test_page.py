"""The Statistics page over a small hand-made store: its numbers (in the one answer
without JavaScript, and as htmx puts them together: the frame, then each section's
partial with its headline numbers), its filter (presets, dates, unit, scope, within) kept
in the address, bad input said next to the filter with its status, a hostile chat title
escaped in the charts and the tables, and an empty store's friendly empty state."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html import unescape

import pytest
from django.test import Client

from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord, MessageRecord
from archive.store.models import Chat, Message, Person
from archive.store.sink import batch_record

pytestmark = pytest.mark.django_db

T = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)  # a Monday
HOSTILE = '<img src=x onerror=alert(1)> "Ops" & co'
MARCH = "/stats/?since=2024-03-01&until=2024-03-31&unit=week"


def say(
    ext: str, chat: str, sender: str, text: str, at: datetime, **extra: object
) -> MessageRecord:
    return MessageRecord(
        chat_external_id=chat,
        external_id=ext,
        sent_at=at,
        text=text,
        sender_external_id=sender,
        **extra,  # type: ignore[arg-type]
    )


def store() -> None:
    """Ann in a direct chat (answered in 10 minutes, then left waiting), Bob in a group
    with a hostile title (a question answered in an hour, then two remarks)."""
    batch_record(
        batch=Batch(
            account=AccountRecord(
                provider="testnet",
                external_id="acct",
                name="Test",
                owner=IdentityRecord(external_id="me", display_name="Robin Owner"),
            ),
            chats=(
                ChatRecord(external_id="ann", kind="dm", title="Ann"),
                ChatRecord(external_id="grp", kind="group", title=HOSTILE),
            ),
            identities=(
                IdentityRecord(external_id="ann", display_name="Ann"),
                IdentityRecord(external_id="bob", display_name="Bob"),
            ),
            messages=(
                say("a1", "ann", "ann", "hi", T),
                say("a2", "ann", "me", "hello!", T + timedelta(minutes=10), direction="out"),
                say("a3", "ann", "ann", "are you there?", T + timedelta(days=1)),
                say("g1", "grp", "bob", "a question?", T + timedelta(hours=2)),
                say("g2", "grp", "me", "an answer", T + timedelta(hours=3), direction="out"),
                say("g3", "grp", "bob", "just saying", T + timedelta(days=2)),
                say("g4", "grp", "bob", "ok", T + timedelta(days=2, minutes=1)),
            ),
        )
    )
    for name in ("Ann", "Bob"):  # each their own person
        person = Person.objects.create(name=name)
        from archive.store.models import Identity

        Identity.objects.filter(external_id=name.lower()).update(person=person)


def text(html: str) -> str:
    """The page's words, tags and runs of space removed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


HX = {"HX-Request": "true"}
PLACEHOLDER = re.compile(
    r'<section class="card stats-card stats-loading"[^>]*hx-get="([^"]+)" hx-trigger="load"'
    r".*?</section>",
    re.S,
)


def kpis(html: str) -> dict[str, str]:
    """The headline numbers shown (a number still loading is not one)."""
    block = html.split('<dl class="stats-kpis">', 1)[1].split("</dl>", 1)[0]
    pairs = re.findall(
        r'<div id="kpi-[\w-]+"><dt>(.*?)</dt><dd>(.*?)</dd></div>',
        block,
        re.S,
    )
    return {name: text(value) for name, value in pairs}


OUT_OF_BAND = re.compile(
    r'<(div|optgroup)( [^>]*)? id="([\w-]+)" hx-swap-oob="true">.*?</\1>', re.S
)


def page(client: Client, address: str, *, htmx: bool) -> str:
    """The page as the owner sees it: the one answer, or (htmx) the frame with each
    placeholder swapped for the partial its own request answers, and what a partial
    sends out of band (headline numbers, the scope menu's people) put where its id is."""
    if not htmx:
        response = client.get(address)
        assert response.status_code == 200
        return response.content.decode()
    frame = client.get(address, headers=HX)
    assert frame.status_code == 200
    elsewhere: list[re.Match[str]] = []

    def arrive(placeholder: re.Match[str]) -> str:
        section = client.get(unescape(placeholder.group(1)), headers=HX)
        assert section.status_code == 200
        assert "HX-Push-Url" not in section  # a section never changes the address
        html = section.content.decode()
        elsewhere.extend(OUT_OF_BAND.finditer(html))
        return OUT_OF_BAND.sub("", html)

    html = PLACEHOLDER.sub(arrive, frame.content.decode())
    for sent in elsewhere:
        tag, ident = sent.group(1), sent.group(3)
        target = re.compile(rf'<{tag}[^>]* id="{ident}"[^>]*>.*?</{tag}>', re.S)
        assert len(target.findall(html)) == 1, f"no place for {ident}"
        place = target.search(html)
        assert place is not None
        landed = sent.group(0).replace(' hx-swap-oob="true"', "")
        html = html[: place.start()] + landed + html[place.end() :]
    return html


@pytest.mark.parametrize("htmx", [False, True], ids=["one-answer", "htmx-sections"])
def test_the_numbers_match_the_store(owner_client: Client, htmx: bool) -> None:
    store()
    html = page(owner_client, MARCH, htmx=htmx)
    assert "aria-busy" not in html
    assert kpis(html) == {
        "Messages": "7",
        "Yours": "2 29%",
        "Waiting on you": "1",
        "Median reply": "35 min",  # 10 min and 1 h
        "p90 reply": "1 h",
    }
    # Messages per week: the week of 4 March holds all seven, two of them the owner's.
    assert "week of 4 Mar 2024: 7 messages, 2 yours" in unescape(html)
    volume = html.split('id="volume-h"', 1)[1].split("</section>", 1)[0]
    assert '<td>week of 4 Mar 2024</td><td class="num">7</td><td class="num">2</td>' in volume
    assert '<td>week of 11 Mar 2024</td><td class="num">0</td>' in volume
    # Top chats: the group (4, one yours) above Ann's (3, one yours); linked to their pages.
    group, ann = Chat.objects.get(external_id="grp"), Chat.objects.get(external_id="ann")
    top = html.split('id="top-chats-h"', 1)[1].split("</section>", 1)[0]
    assert top.index(f'href="/chats/{group.pk}/"') < top.index(f'href="/chats/{ann.pk}/"')
    assert re.findall(r'class="top-count">(\d+)<', top) == ["4", "3"]
    # Top people: Bob wrote three, Ann two; the owner is not among them.
    people = html.split('id="top-people-h"', 1)[1].split("</section>", 1)[0]
    assert re.findall(r'class="top-name"[^>]*>([^<]+)<', people) == ["Bob", "Ann"]
    assert "Robin Owner" not in people
    # The heatmap: at 09:00 Ann's hello and the owner's answer on Monday, her question on
    # Tuesday, Bob's two remarks on Wednesday; at 11:00 on Monday Bob's question.
    heat = html.split('id="heat-h"', 1)[1].split("</section>", 1)[0]
    assert "Monday 09:00-10:00: 2 messages" in heat
    assert "Monday 11:00-12:00: 1 message<" in heat
    row = re.search(r'<th scope="row">09:00</th>((?:<td class="num">\d+</td>){7})', heat)
    assert row is not None and re.findall(r">(\d+)<", row.group(1)) == [
        "2",
        "1",
        "2",
        "0",
        "0",
        "0",
        "0",
    ]
    # Response times: per chat, 10 min for Ann's and 1 h for the group.
    responses = html.split('id="resp-h"', 1)[1].split("</section>", 1)[0]
    assert "median 35 min · p90 1 h · 2 answers" in text(responses)
    assert "Ann 1 10 min 10 min" in text(responses)
    # Waiting on you: Ann's question a day later, linked to the message in its chat.
    waiting = html.split('id="unanswered-h"', 1)[1].split("</section>", 1)[0]
    late = Message.objects.get(external_id="a3")
    assert f'href="/m/{late.public_id}/"' in waiting
    assert "are you there?" in waiting and "direct message" in waiting
    assert "1 not answered within 2 days" in text(waiting)


@pytest.mark.parametrize("htmx", [False, True], ids=["one-answer", "htmx-sections"])
def test_within_and_scope_change_the_numbers(owner_client: Client, htmx: bool) -> None:
    store()
    # Within 4 hours: the same one waits (the hour-long answer was in time).
    html = page(owner_client, MARCH + "&within=4h", htmx=htmx)
    assert "1 not answered within 4 hours" in text(html)
    # One chat: only its messages; its own top list is left out, people remain.
    ann = Chat.objects.get(external_id="ann")
    html = page(owner_client, MARCH + f"&chat={ann.pk}", htmx=htmx)
    assert kpis(html)["Messages"] == "3"
    assert 'id="top-chats-h"' not in html
    assert "chat Ann, 1 Mar 2024" in html
    assert f'<option value="chat:{ann.pk}" selected>' in html
    # The form's scope menu answers the same as the chat's own link.
    same = page(owner_client, MARCH + f"&scope=chat:{ann.pk}", htmx=htmx)
    assert kpis(same) == kpis(html)
    # One person: Bob's three messages.
    bob = Person.objects.get(name="Bob")
    html = page(owner_client, MARCH + f"&person={bob.pk}", htmx=htmx)
    assert kpis(html)["Messages"] == "3"
    assert 'id="top-people-h"' not in html
    assert f'<option value="person:{bob.pk}" selected>Bob</option>' in html


def test_presets_and_units_in_the_address(owner_client: Client) -> None:
    html = owner_client.get("/stats/?range=30d").content.decode()
    assert re.search(
        r'<a href="/stats/\?range=30d[^"]*" hx-get="[^"]*" aria-current="true">30 days</a>', html
    )
    assert 'value="day" selected' in html  # thirty days are shown by day
    html = owner_client.get("/stats/").content.decode()
    assert re.search(r'aria-current="true">A year</a>', html)
    assert 'value="week" selected' in html
    # Too many days to draw: made coarser, and said.
    html = owner_client.get("/stats/?since=2020-01-01&until=2024-12-31&unit=day").content.decode()
    assert "Too many days to draw for this range: shown by week." in html
    assert 'value="week" selected' in html
    html = owner_client.get("/stats/?since=2010-01-01&until=2024-12-31&unit=day").content.decode()
    assert "Too many weeks to draw for this range: shown by month." in html


@pytest.mark.parametrize(
    ("query", "status", "said"),
    [
        ("since=yesterday", 422, "since: not a date (YYYY-MM-DD): &#x27;yesterday&#x27;"),
        (
            "since=2024-05-01&until=2024-04-01",
            422,
            "until: 2024-04-01 is before since (2024-05-01)",
        ),
        ("chat=987654", 404, "chat: no chat 987654"),
        ("person=987654", 404, "person: no person 987654"),
        ("chat=abc", 422, "chat: not an id"),
        ("scope=planet:3", 422, "scope: an account, chat or person"),
        ("unit=year", 422, "unit: one of day, week, month"),
        ("within=3d", 422, "within: one of 4h, 1d, 2d, 7d"),
        ("range=forever", 422, "range: one of 30d, 90d, 365d, all"),
        ("since=2000-01-01&until=2024-01-01", 422, "since: the range is over 20 years"),
        ("since=0001-01-01", 422, "since: 0001-01-01 is out of range"),
        ("until=0001-01-02", 422, "until: 0001-01-02 is too early"),
    ],
)
def test_bad_input_is_said_next_to_the_filter(
    owner_client: Client, query: str, status: int, said: str
) -> None:
    response = owner_client.get(f"/stats/?{query}")
    assert response.status_code == status
    html = response.content.decode()
    problem = re.search(
        r'<p class="error stats-problem" id="stats-problem" role="alert">(.*?)</p>', html
    )
    assert problem is not None and said in problem.group(1)
    assert 'aria-describedby="stats-problem"' in html  # the form points at it
    assert 'class="stats-kpis"' not in html  # no numbers for a filter that is wrong


@pytest.mark.parametrize("htmx", [False, True], ids=["one-answer", "htmx-sections"])
def test_a_hostile_title_is_escaped_in_charts_and_tables(owner_client: Client, htmx: bool) -> None:
    store()
    html = page(owner_client, MARCH, htmx=htmx)
    assert "<img src=x" not in html
    escaped = "&lt;img src=x onerror=alert(1)&gt; &quot;Ops&quot; &amp; co"
    # the bar's SVG title and aria-label, the table, the scope menu, the waiting list
    assert f"<title>{escaped}: 4 messages, 1 yours</title>" in html
    assert f'aria-label="{escaped}: 4 messages, 1 yours"' in html
    assert f"<td>{escaped}</td>" in html
    group = Chat.objects.get(external_id="grp")
    scoped = page(owner_client, MARCH + f"&chat={group.pk}", htmx=htmx)
    assert "<img src=x" not in scoped
    assert f"chat {escaped}, 1 Mar 2024" in scoped


@pytest.mark.parametrize("htmx", [False, True], ids=["one-answer", "htmx-sections"])
def test_an_empty_store_is_a_friendly_empty_state(owner_client: Client, htmx: bool) -> None:
    for query in ("", "?range=all", "?range=30d&unit=month", "?since=2024-01-01&until=2024-01-01"):
        html = page(owner_client, f"/stats/{query}", htmx=htmx)
        assert kpis(html) == {
            "Messages": "0",
            "Yours": "0",
            "Waiting on you": "0",
            "Median reply": "-",
            "p90 reply": "-",
        }
        assert "No messages in this range." in html
        assert "No answers of yours in this range to time." in html
        assert "Nothing waiting" in html


def test_htmx_gets_the_body_and_the_address(owner_client: Client) -> None:
    store()
    response = owner_client.get(MARCH + "&within=1d", headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="stats"')
    assert "<html" not in html
    assert (
        response["HX-Push-Url"] == "/stats/?since=2024-03-01&until=2024-03-31&unit=week&within=1d"
    )


@pytest.mark.parametrize("htmx", [False, True], ids=["one-answer", "htmx-sections"])
def test_every_chart_has_words_and_a_table(owner_client: Client, htmx: bool) -> None:
    store()
    html = page(owner_client, MARCH, htmx=htmx)
    figures = re.findall(r"<figure.*?</figure>", html, re.S)
    assert len(figures) == 5  # messages, two top lists, heatmap, response times
    for figure in figures:
        assert "<figcaption" in figure
        assert re.search(r'role="img" aria-label="[^"]{10,}"', figure)
    assert html.count("<summary>Show as table</summary>") == 5


def test_the_chat_and_person_pages_link_here(owner_client: Client) -> None:
    store()
    ann = Chat.objects.get(external_id="ann")
    assert f'href="/stats/?chat={ann.pk}"' in owner_client.get(f"/chats/{ann.pk}/").content.decode()
    bob = Person.objects.get(name="Bob")
    assert (
        f'href="/stats/?person={bob.pk}"' in owner_client.get(f"/people/{bob.pk}/").content.decode()
    )
    assert 'href="/stats/"' in owner_client.get("/").content.decode()  # the main menu
