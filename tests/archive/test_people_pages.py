"""The People pages at scale (issue 16): identities made into people many at a time (ticked,
or every one matching the filter), linked to one person by the picker, suggestions accepted
together; what tells two identities of the same name apart, one query per page; a person's
activity chart over their whole history."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.test import Client

from archive.people.models import IdentityLink
from archive.people.selectors import activity, identity_facts
from archive.people.services import person_create
from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord, MessageRecord
from archive.store.models import Identity, Person
from archive.store.sink import batch_record
from tests.factories import batch, message

pytestmark = pytest.mark.django_db


def named(provider: str, *people: tuple[str, str], chats: int = 1, **contact: str) -> Batch:
    """An account of `provider` where each (external id, name) wrote one message in each of
    `chats` chats ("<provider> room N")."""
    rooms = [f"room-{n}" for n in range(chats)]
    return Batch(
        account=AccountRecord(provider=provider, external_id=f"{provider}-acct"),
        chats=tuple(
            ChatRecord(external_id=room, kind="group", title=f"{provider} {room}") for room in rooms
        ),
        identities=tuple(
            IdentityRecord(external_id=ext, display_name=name, **contact) for ext, name in people
        ),
        messages=tuple(
            message(f"{ext}-{room}-{n}", "hello", chat=room, sender=ext, minutes=n)
            for ext, _ in people
            for n, room in enumerate(rooms)
        ),
    )


def test_ticked_identities_are_each_made_a_person(owner_client: Client) -> None:
    batch_record(batch=named("chatnet", ("u1", "Ann"), ("u2", "Ben"), ("u3", "Cy")))
    ids = list(Identity.objects.filter(external_id__in=["u1", "u2"]).values_list("pk", flat=True))
    done = owner_client.post(
        "/people/bulk/", {"identity": [str(i) for i in ids], "action": "each"}, follow=True
    )
    assert "Made 2 people." in done.content.decode()
    made = {
        i.display_name: i.person.name if i.person else None
        for i in Identity.objects.filter(pk__in=ids).select_related("person")
    }
    assert made == {"Ann": "Ann", "Ben": "Ben"}  # each named after its identity
    assert Identity.objects.get(external_id="u3").person_id is None
    assert set(IdentityLink.objects.filter(actor="owner").values_list("action", flat=True)) == {
        "link"
    }


def test_every_identity_matching_the_filter_at_once(owner_client: Client) -> None:
    batch_record(batch=named("chatnet", *[(f"s{n}", f"Sam {n}") for n in range(30)], ("z", "Zoe")))
    page = owner_client.get("/people/", {"q": "sam"}).content.decode()
    assert "all 30 identities matching “sam”" in page
    owner_client.post("/people/bulk/", {"all_matching": "1", "q": "sam", "action": "each"})
    assert Person.objects.filter(name__startswith="Sam ").count() == 30
    assert Identity.objects.get(external_id="z").person_id is None  # not matching: untouched


def test_ticked_identities_are_linked_to_one_person_picked_or_new(owner_client: Client) -> None:
    batch_record(batch=named("chatnet", ("a1", "Adam")))
    batch_record(batch=named("othernet", ("a2", "Adam"), ("a3", "Adam A.")))
    a1, a2, a3 = (Identity.objects.get(external_id=e).pk for e in ("a1", "a2", "a3"))
    adam = person_create(name="Adam Smith", identity_ids=[a1])
    moved = owner_client.post(
        "/people/bulk/",
        {"identity": [a2, a3], "action": "link", "person": f"Adam Smith (#{adam.pk})"},
        follow=True,
    )
    assert moved.redirect_chain[-1][0] == f"/people/{adam.pk}/"
    assert "Linked 2 identities to “Adam Smith”." in moved.content.decode()
    assert set(adam.identities.values_list("pk", flat=True)) == {a1, a2, a3}
    # A name no person has: one new person holding them all (moved, and audited so).
    owner_client.post("/people/bulk/", {"identity": [a2, a3], "action": "link", "person": "A."})
    fresh = Person.objects.get(name="A.")
    assert set(fresh.identities.values_list("pk", flat=True)) == {a2, a3}
    assert IdentityLink.objects.filter(identity_id=a2, action="unlink").count() == 1
    # Two people of one name: the picker's "(#id)" tells them apart, a bare name does not.
    Person.objects.create(name="A.")
    refused = owner_client.post(
        "/people/bulk/", {"identity": [a1], "action": "link", "person": "a."}, follow=True
    ).content.decode()
    assert "More than one person is called “a.”" in refused
    nothing = owner_client.post("/people/bulk/", {"action": "each"}, follow=True)
    assert "Choose one or more identities first." in nothing.content.decode()
    assert owner_client.post("/people/bulk/", {"identity": "x", "action": "?"}).status_code == 302


def test_a_rows_own_button_makes_just_that_identity_a_person(owner_client: Client) -> None:
    batch_record(batch=named("chatnet", ("u1", "Ann"), ("u2", "Ben")))
    u1 = Identity.objects.get(external_id="u1")
    made = owner_client.post(
        "/people/bulk/", {"one": u1.pk, "identity": [u1.pk, u1.pk + 1], "action": "each"}
    )
    person = Identity.objects.get(pk=u1.pk).person
    assert person is not None and made["Location"] == f"/people/{person.pk}/"
    assert Identity.objects.get(external_id="u2").person_id is None
    assert owner_client.post("/people/bulk/", {"one": "99999"}).status_code == 404


def test_identities_of_one_name_are_told_apart_in_one_query_per_page(
    owner_client: Client, django_assert_max_num_queries: Any
) -> None:
    batch_record(batch=named("discordish", ("d1", "Adam"), chats=3, email="adam@d.example"))
    batch_record(batch=named("telegramish", ("t1", "Adam"), chats=1, handle="@adam_t"))
    facts = identity_facts(list(Identity.objects.values_list("pk", flat=True)))
    d1 = facts[Identity.objects.get(external_id="d1").pk]
    assert d1.messages == 3 and len(d1.chats) == 2  # the top two of its three chats
    html = owner_client.get("/people/").content.decode()
    rows = html.split('class="list reflow loose-table"', 1)[1]
    assert "adam@d.example" in rows and "@adam_t" in rows
    # the busiest (then the latest) two chats: room-2 and room-1 of three
    assert ">discordish room-2</a>" in rows and ">discordish room-0</a>" not in rows
    assert ">telegramish room-0</a>" in rows
    owner_client.get("/people/")
    with django_assert_max_num_queries(14) as few:
        owner_client.get("/people/")
    batch_record(batch=named("bulknet", *[(f"b{n}", f"B {n}") for n in range(40)], chats=2))
    with django_assert_max_num_queries(len(few.captured_queries)):
        owner_client.get("/people/")  # 25 rows with facts: the same queries as 2
    # The link picker on a person's page says the same.
    person = person_create(name="Adam")
    picker = owner_client.get(f"/people/{person.pk}/", {"find": "adam"}).content.decode()
    assert (
        "3 messages in discordish room-" in picker and "1 message in telegramish room-0" in picker
    )
    assert "last seen" in picker and 'aria-label="Link Adam (telegramish)"' in picker


def test_ticked_suggestions_are_accepted_together(owner_client: Client) -> None:
    batch_record(
        batch=Batch(
            account=AccountRecord(provider="one", external_id="x"),
            chats=(ChatRecord(external_id="c", kind="group", title="C"),),
            identities=(
                IdentityRecord(external_id="p", display_name="Pat", phone="+1 555 0100"),
                IdentityRecord(external_id="q", display_name="Quinn", email="q@example.org"),
            ),
            messages=(),
        )
    )
    batch_record(
        batch=Batch(
            account=AccountRecord(provider="two", external_id="y"),
            chats=(ChatRecord(external_id="c", kind="group", title="C"),),
            identities=(
                IdentityRecord(external_id="p", display_name="P.", phone="15550100"),
                IdentityRecord(external_id="q", display_name="Q.", email="Q@example.org"),
            ),
            messages=(),
        )
    )
    page = owner_client.get("/people/suggestions/").content.decode()
    groups = [v for v in page.split('name="group" value="')[1:]]
    assert len(groups) == 2
    values = [g.split('"', 1)[0] for g in groups]
    done = owner_client.post(
        "/people/suggestions/", {"group": values, "action": "ticked"}, follow=True
    )
    assert "Accepted 2 suggestions" in done.content.decode()
    assert set(Person.objects.values_list("name", flat=True)) == {"Pat", "Quinn"}
    again = owner_client.post("/people/suggestions/", {"action": "ticked"}, follow=True)
    assert "Tick one or more suggestions first." in again.content.decode()


def _history(days: list[int]) -> None:
    start = datetime(2015, 3, 2, 12, tzinfo=UTC)
    batch_record(
        batch=batch(
            *[
                MessageRecord(
                    chat_external_id="chat-1",
                    external_id=str(n),
                    sent_at=start + timedelta(days=day),
                    text="hi",
                    sender_external_id="alice",
                )
                for n, day in enumerate(days)
            ]
        )
    )


def test_a_long_history_is_charted_whole_by_month(owner_client: Client) -> None:
    # 2015-03 to 2017-10: 242 messages, most of them long before the last two years.
    days = [n * 4 for n in range(242)]
    _history(days)
    alice = Identity.objects.get(external_id="alice")
    chart = activity(sender_ids=[alice.pk])
    assert chart.unit == "month" and chart.total == 242
    assert chart.buckets[0] == (date(2015, 3, 1), 8)
    assert chart.buckets[-1][0] == date(2017, 10, 1)
    assert len(chart.buckets) == 32  # every month, none left out
    person = person_create(name="Alice", identity_ids=[alice.pk])
    html = owner_client.get(f"/people/{person.pk}/").content.decode()
    assert html.count("<rect ") == 32 and "March 2015: 8 messages" in html
    assert 'data-unit="month"' in html and "Mar 2015" in html and "Oct 2017" in html
    assert html.count('<line class="year"') == 2  # 2016 and 2017 begin


def test_a_short_history_stays_by_week() -> None:
    _history([0, 3, 40, 200])
    alice = Identity.objects.get(external_id="alice")
    chart = activity(sender_ids=[alice.pk])
    assert chart.unit == "week" and chart.total == 4
    assert all(start.weekday() == 0 for start, _ in chart.buckets)
    assert activity(sender_ids=[]).buckets == []
