"""The search page's Meetings tab: tabs as plain links, hits that open the transcript at the
line they were said (speaker, time into the meeting, the meeting's time in the owner's zone),
paging by the selector's cursor, refused operators as a sentence, the Messages tab as it was."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client

from archive.store.sink import batch_record
from tests.factories import batch, message
from tests.meetings.search_factories import T0, meeting, transcript

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _owner_zone(settings: Any) -> None:
    settings.TIME_ZONE = "Europe/Berlin"


def _get(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def _hits(html: str) -> list[str]:
    return re.findall(r'<li class="hit meeting-hit[^"]*">(.*?)</li>', html, re.S)


def test_the_tabs_are_plain_links_keeping_the_query_and_mark_the_current_one(
    owner_client: Client,
) -> None:
    messages_tab = _get(owner_client, "/search/?q=invoice")
    assert re.search(
        r'<a href="\?q=invoice&amp;sort=relevance" aria-current="page">Messages', messages_tab
    )
    assert re.search(
        r'<a href="\?q=invoice&amp;tab=meeting&amp;mode=hybrid">Meetings', messages_tab
    )

    meetings_tab = _get(owner_client, "/search/?q=invoice&tab=meeting")
    assert re.search(r'<a href="\?q=invoice&amp;sort=relevance">Messages', meetings_tab)
    assert re.search(r'tab=meeting&amp;mode=hybrid" aria-current="page">Meetings', meetings_tab)
    # Typing on the Meetings tab stays on it.
    assert '<input type="hidden" name="tab" value="meeting">' in meetings_tab
    # The tab's address before there were more tabs still opens it.
    assert 'aria-current="page">Meetings' in _get(owner_client, "/search/?q=invoice&kind=meetings")


def test_a_spoken_word_links_to_its_line_with_speaker_and_time_into_the_meeting(
    owner_client: Client,
) -> None:
    made = meeting("Budget review", start=T0)  # 09:00 UTC: 10:00 in Berlin
    spoken = transcript(
        made,
        [
            ("Ann", "good morning everyone"),
            ("Bob", "the <b>invoice</b> from Acme is late", 754_000),
        ],
    )
    line = spoken.segments.get(seq=1)
    html = _get(owner_client, "/search/?q=invoice&kind=meetings")
    hits = _hits(html)
    assert len(hits) == 1
    hit = hits[0]
    assert f'href="/meetings/{made.public_id}/?line={line.pk}#seg-{line.pk}"' in hit
    assert '<span class="who">Bob</span>' in hit
    assert ">12:34<" in hit
    assert "Budget review" in hit
    assert "Mon 3 Mar 2025, 10:00" in hit  # the owner's time zone
    assert "<mark>invoice</mark>" in hit
    assert "&lt;b&gt;" in hit and "<b>" not in hit  # spoken text is escaped
    # The whole answer is on this page: the tab counts it.
    assert re.search(r'aria-current="page">Meetings <span class="tab-count">1</span>', html)
    # The line links to exists on the meeting page with that anchor.
    page = _get(owner_client, f"/meetings/{made.public_id}/")
    assert f'id="seg-{line.pk}"' in page


def test_a_title_hit_links_to_the_meeting(owner_client: Client) -> None:
    made = meeting("Quarterly planning", description="goals for the spring")
    hit = _hits(_get(owner_client, "/search/?q=spring&kind=meetings"))[0]
    assert f'href="/meetings/{made.public_id}/"' in hit
    assert "title or description" in hit
    assert "<mark>spring</mark>" in hit


def test_more_results_pages_with_the_selectors_cursor(owner_client: Client) -> None:
    for day in range(25):
        made = meeting(f"Standup {day}", start=T0 + timedelta(days=day))
        transcript(made, [("Ann", "the deploy went fine")])
    first = _get(owner_client, "/search/?q=deploy&kind=meetings")
    assert len(_hits(first)) == 20
    # Counting beyond a page would cost a search.
    assert 'aria-current="page">Meetings</a>' in first
    more = re.search(r'<a href="(\?q=deploy&amp;tab=meeting&amp;cursor=[^"]+)"', first)
    assert more is not None
    second = _get(owner_client, "/search/" + more.group(1).replace("&amp;", "&"))
    assert len(_hits(second)) == 5
    assert "More results" not in second
    assert 'aria-current="page">Meetings' in second


@pytest.mark.parametrize(
    ("query", "sentence"),
    [
        ("invoice has:attachment", "has: is for messages"),
        ("invoice is:dm", "is: is for messages"),
        ('"never closed', "never closed"),
    ],
)
def test_a_query_meetings_cannot_answer_is_a_sentence(
    owner_client: Client, query: str, sentence: str
) -> None:
    response = owner_client.get("/search/", {"q": query, "kind": "meetings"})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'role="alert"' in html
    assert sentence in html


def test_a_bad_cursor_or_kind_never_fails(owner_client: Client) -> None:
    html = _get(owner_client, "/search/?q=x&kind=meetings&cursor=%%%")
    assert "not a cursor this search gave out" in html
    other = _get(owner_client, "/search/?q=x&kind=nonsense")
    assert 'aria-current="page">Messages' in other


def test_empty_states(owner_client: Client) -> None:
    assert "Type to search what was said in meetings" in _get(
        owner_client, "/search/?kind=meetings"
    )
    assert "No meeting matches <q>zebra</q>" in _get(owner_client, "/search/?q=zebra&kind=meetings")


def test_htmx_swaps_the_meetings_results_with_the_tabs(owner_client: Client) -> None:
    transcript(meeting("Sync"), [("Ann", "lunch at noon")])
    response = owner_client.get("/search/?q=lunch&kind=meetings", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="results"')
    assert 'aria-current="page">Meetings' in html
    assert len(_hits(html)) == 1


def test_the_messages_tab_is_unaffected(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "the invoice came today")))
    transcript(meeting("Sync"), [("Ann", "the invoice is late")])
    html = _get(owner_client, "/search/?q=invoice")
    assert "<mark>invoice</mark> came today" in html
    assert "is late" not in html  # meetings stay on their tab
    assert 'aria-current="page">Messages <span class="tab-count">1</span>' in html
    assert 'class="hit meeting-hit' not in html
    assert '<select id="sort" name="sort">' in html
