"""The Statistics page as htmx loads it: the frame (filter, headline numbers busy, a
placeholder per section) costs a few small queries and no statistics; each placeholder
asks for its own section, which answers only its partial with its headline numbers out
of band, under ids that carry the filter; a bad section or filter is a sentence with
its status, never a 500."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from archive.store.models import Chat, Person
from tests.stats.test_page import HX, MARCH, store

pytestmark = pytest.mark.django_db

SECTIONS = ["volume", "chats", "people", "heatmap", "responses", "waiting"]


def placeholders(html: str) -> dict[str, str]:
    """Each section still to come: its name and the address it asks."""
    found = re.findall(
        r'<section class="card stats-card stats-loading" aria-labelledby="[\w-]+" '
        r'aria-busy="true" data-section="(\w+)"\s+hx-get="([^"]+)" hx-trigger="load" '
        r'hx-target="this" hx-swap="outerHTML" hx-push-url="false">',
        html,
    )
    return {name: unescape(url) for name, url in found}


def test_the_frame_asks_for_each_section_and_counts_nothing(owner_client: Client) -> None:
    store()
    with CaptureQueriesContext(connection) as queries:
        response = owner_client.get(MARCH + "&within=1d", headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert list(placeholders(html)) == SECTIONS
    for name, url in placeholders(html).items():
        assert (
            url == f"/stats/?since=2024-03-01&until=2024-03-31&unit=week&within=1d&section={name}"
        )
    # The headline numbers wait too: five busy ones, none counted.
    assert len(re.findall(r'<div id="kpi-\w+-\w+" aria-busy="true"><dt>', html)) == 5
    assert 'class="top-count"' not in html and "<figure" not in html
    # Five queries in all (measured): the session, the user, the first message's day (for
    # the presets), the accounts and the biggest chats for the scope menu; no statistics.
    sql = [q["sql"] for q in queries.captured_queries]
    assert len(sql) <= 5, sql
    assert not any("GROUP BY" in q or "COUNT(" in q.upper() for q in sql), sql
    # One chat: its own top list is not asked for; one person: nor theirs.
    ann = Chat.objects.get(external_id="ann")
    html = owner_client.get(MARCH + f"&chat={ann.pk}", headers=HX).content.decode()
    assert "chats" not in placeholders(html) and "people" in placeholders(html)
    bob = Person.objects.get(name="Bob")
    html = owner_client.get(MARCH + f"&person={bob.pk}", headers=HX).content.decode()
    assert "people" not in placeholders(html) and "chats" in placeholders(html)
    assert f'<option value="person:{bob.pk}" selected>Bob</option>' in html


def test_a_section_answers_its_partial_and_its_numbers(owner_client: Client) -> None:
    store()
    frame = owner_client.get(MARCH, headers=HX).content.decode()
    key = re.search(r'id="kpi-messages-(\w+)"', frame)
    assert key is not None
    urls = placeholders(frame)
    html = owner_client.get(urls["volume"], headers=HX).content.decode()
    assert html.lstrip().startswith('<section class="card stats-card" aria-labelledby="volume-h">')
    assert "<html" not in html and 'id="stats"' not in html and 'id="heat-h"' not in html
    assert '<td>week of 4 Mar 2024</td><td class="num">7</td><td class="num">2</td>' in html
    assert (
        f'<div id="kpi-messages-{key.group(1)}" hx-swap-oob="true"><dt>Messages</dt><dd>7</dd>'
        in html
    )
    assert f'<div id="kpi-yours-{key.group(1)}" hx-swap-oob="true"><dt>Yours</dt><dd>2 ' in html
    html = owner_client.get(urls["responses"], headers=HX).content.decode()
    assert (
        f'id="kpi-median-{key.group(1)}" hx-swap-oob="true"><dt>Median reply</dt><dd>35 min<'
        in html
    )
    assert f'id="kpi-p90-{key.group(1)}" hx-swap-oob="true"><dt>p90 reply</dt><dd>1 h<' in html
    html = owner_client.get(urls["waiting"], headers=HX).content.decode()
    assert "1 not answered within 2 days" in " ".join(html.split())
    assert re.search(rf'id="kpi-waiting-{key.group(1)}" hx-swap-oob="true">.*>1</a>', html)
    # Top people sends the scope menu its people.
    html = owner_client.get(urls["people"], headers=HX).content.decode()
    people = re.search(
        rf'<optgroup label="People" id="stats-scope-people-{key.group(1)}" hx-swap-oob="true">'
        r"(.*?)</optgroup>",
        html,
        re.S,
    )
    assert people is not None
    assert re.findall(r">(\w+)</option>", people.group(1)) == ["Ann", "Bob"]
    # Another filter's numbers go under other ids: a late answer for a page since swapped
    # for another filter finds nowhere to land.
    other = owner_client.get(MARCH + "&within=4h&section=volume", headers=HX).content.decode()
    assert f"kpi-messages-{key.group(1)}" not in other and 'id="kpi-messages-' in other


@pytest.mark.parametrize(
    ("query", "status", "said"),
    [
        ("section=everything", 422, "section: one of volume, chats, people, heatmap, responses"),
        ("section=volume&since=nope", 422, "since: not a date (YYYY-MM-DD): &#x27;nope&#x27;"),
        ("section=waiting&chat=987654", 404, "chat: no chat 987654"),
        ("section=people&within=3d", 422, "within: one of 4h, 1d, 2d, 7d"),
    ],
)
@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_a_bad_section_or_filter_is_a_sentence(
    owner_client: Client, query: str, status: int, said: str, htmx: bool
) -> None:
    response = owner_client.get(f"/stats/?{query}", headers=HX if htmx else {})
    assert response.status_code == status
    html = response.content.decode()
    problem = re.fullmatch(r'\s*<p class="error stats-problem" role="alert">(.*?)</p>\s*', html)
    assert problem is not None and said in problem.group(1)
