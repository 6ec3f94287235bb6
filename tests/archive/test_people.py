"""People: linking identities by hand with an audit, suggestions from shared phone numbers
and e-mail addresses (never names), the people list, the person page and its chart."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
from django.test import Client

from archive.people import services as people
from archive.people.models import IdentityLink
from archive.people.selectors import activity_weeks, people_list, suggestions
from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord
from archive.store.models import Identity, Person
from archive.store.sink import batch_record
from tests.factories import T0, batch, message
from wirecat.errors import Invalid, NotFound

pytestmark = pytest.mark.django_db

OTHER = AccountRecord(provider="othernet", external_id="acct-2", name="Other")


def other_batch(*messages: Any, identities: tuple[IdentityRecord, ...]) -> Batch:
    return Batch(
        account=OTHER,
        chats=(ChatRecord(external_id="o-1", kind="dm", title="Other DM"),),
        identities=identities,
        messages=messages,
    )


@pytest.fixture
def world(db: None) -> dict[str, Identity]:
    batch_record(
        batch=batch(
            message("1", "hello from alice", sender="alice", minutes=0),
            message("2", "bob here", sender="bob", minutes=60 * 24 * 8),
            message("3", "alice again", sender="alice", minutes=60 * 24 * 9, chat="chat-2"),
        )
    )
    batch_record(
        batch=other_batch(
            message("x1", "alice on the other one", chat="o-1", sender="a2", minutes=5),
            identities=(
                # the same phone as Alice (+15550001) written differently
                IdentityRecord(external_id="a2", display_name="A. S.", phone="+1 555-0001"),
                # Bob's name, but nothing shared: never suggested
                IdentityRecord(external_id="b2", display_name="Bob"),
                IdentityRecord(external_id="c2", display_name="Carol", email="Carol@Example.com"),
            ),
        )
    )
    Identity.objects.filter(external_id="bob").update(email="carol@example.com")
    return {i.external_id: i for i in Identity.objects.all()}


def test_link_and_unlink_are_idempotent_and_audited(world: dict[str, Identity]) -> None:
    person = people.person_create(name="  Alice   Smith ", identity_ids=[world["alice"].pk])
    assert person.name == "Alice Smith"
    people.identity_link(identity_id=world["a2"].pk, person_id=person.pk)
    people.identity_link(identity_id=world["a2"].pk, person_id=person.pk)  # again: nothing
    other = people.person_create(name="Someone")
    people.identity_link(identity_id=world["a2"].pk, person_id=other.pk)  # moved
    people.identity_unlink(identity_id=world["a2"].pk)
    people.identity_unlink(identity_id=world["a2"].pk)
    audit = [
        (row.action, row.identity.external_id, row.person_name)
        for row in IdentityLink.objects.exclude(actor="system").order_by("at", "id")
    ]  # "system": the owner's own identity, linked to the owner as it arrived
    assert audit == [
        ("link", "alice", "Alice Smith"),
        ("link", "a2", "Alice Smith"),
        ("unlink", "a2", "Alice Smith"),
        ("link", "a2", "Someone"),
        ("unlink", "a2", "Someone"),
    ]
    with pytest.raises(NotFound, match="identity 999 does not exist"):
        people.identity_link(identity_id=999, person_id=person.pk)
    with pytest.raises(Invalid, match="name: empty"):
        people.person_create(name=" ")
    assert Identity.objects.count() == 6  # identities are never deleted


def test_suggestions_come_from_phone_or_email_across_providers_never_names(
    world: dict[str, Identity],
) -> None:
    found = {s.key: {i.external_id for i in s.identities} for s in suggestions()}
    assert found == {"phone:15550001": {"alice", "a2"}, "email:carol@example.com": {"bob", "c2"}}
    person = people.suggestion_accept(identity_ids=[world["alice"].pk, world["a2"].pk])
    assert person.name == "Alice"
    assert set(person.identities.values_list("external_id", flat=True)) == {"alice", "a2"}
    assert {s.key for s in suggestions()} == {"email:carol@example.com"}  # done ones go
    with pytest.raises(Invalid, match="share no phone number or e-mail address"):
        people.suggestion_accept(identity_ids=[world["bob"].pk, world["b2"].pk])  # name only
    with pytest.raises(Invalid, match="needs two or more"):
        people.suggestion_accept(identity_ids=[world["bob"].pk])


def test_people_list_finds_by_any_identity_and_sorts_by_activity(
    world: dict[str, Identity],
) -> None:
    alice = people.person_create(name="Alice", identity_ids=[world["alice"].pk])
    bob = people.person_create(name="Bob", identity_ids=[world["bob"].pk])
    people.person_create(name="Nobody")
    # alice wrote last; the owner (their account's identity, linked as it arrived) is a
    # person too, who wrote nothing here
    assert [p.name for p in people_list()] == ["Alice", "Bob", "Nobody", "Owner Person"]
    assert [p.name for p in people_list(sort="name")] == ["Alice", "Bob", "Nobody", "Owner Person"]
    assert [p.pk for p in people_list(q="5550001")] == [alice.pk]
    assert [p.pk for p in people_list(q="CAROL@example")] == [bob.pk]
    assert list(people_list(q="zzz")) == []


def test_activity_counts_messages_per_week(world: dict[str, Identity]) -> None:
    weeks = activity_weeks(sender_ids=[world["alice"].pk], weeks=3)
    monday = (T0 + timedelta(days=9)).date()
    monday -= timedelta(days=monday.weekday())
    assert weeks == [
        (monday - timedelta(weeks=2), 0),
        (monday - timedelta(weeks=1), 1),  # Friday 1 March: the week of Monday 26 February
        (monday, 1),  # Sunday 10 March
    ]
    assert all(isinstance(start, date) and start.weekday() == 0 for start, _ in weeks)
    assert activity_weeks(sender_ids=[]) == []


def test_person_page_shows_identities_chats_chart_and_latest(
    owner_client: Client, world: dict[str, Identity], django_assert_max_num_queries: Any
) -> None:
    person = people.person_create(name="Alice", identity_ids=[world["alice"].pk, world["a2"].pk])
    with django_assert_max_num_queries(14):
        html = owner_client.get(f"/people/{person.pk}/").content.decode()
    assert "3 messages" in html
    assert "Chat chat-1" in html and "Chat chat-2" in html and "Other DM" in html
    assert html.count("<rect ") == 12 and "week of" in html  # a short history: 12 weeks
    assert "alice on the other one" in html
    assert 'id="tags-person-' in html
    found = owner_client.get(f"/people/{person.pk}/", {"find": "Carol"}).content.decode()
    assert "Carol" in found and 'value="link"' in found


def test_person_pages_link_unlink_and_refuse_bad_input(
    owner_client: Client, world: dict[str, Identity]
) -> None:
    person = people.person_create(name="Alice")
    url = f"/people/{person.pk}/edit/"
    owner_client.post(url, {"action": "link", "identity": world["alice"].pk})
    assert Identity.objects.get(pk=world["alice"].pk).person_id == person.pk
    owner_client.post(url, {"action": "unlink", "identity": world["alice"].pk})
    assert Identity.objects.get(pk=world["alice"].pk).person_id is None
    bad = owner_client.post(url, {"action": "link", "identity": "x"}, follow=True)
    assert "identity: not an id" in bad.content.decode()
    assert owner_client.post(url, {"action": "link", "identity": "999"}).status_code == 404
    assert owner_client.get("/people/999/").status_code == 404
    made = owner_client.post("/people/new/", {"identity": world["c2"].pk})
    carol = Person.objects.get(name="Carol")
    assert made["Location"] == f"/people/{carol.pk}/"
    accepted = owner_client.post(
        "/people/suggestions/", {"identity": [world["bob"].pk, world["c2"].pk]}, follow=True
    )
    assert "Linked 2 identities to “Carol”" in accepted.content.decode()


def test_people_pages_escape_provider_names(
    owner_client: Client, world: dict[str, Identity]
) -> None:
    Identity.objects.filter(pk=world["b2"].pk).update(display_name="<script>alert(1)</script>")
    person = people.person_create(name="<b>Bold</b>", identity_ids=[world["b2"].pk])
    for url in ("/people/", f"/people/{person.pk}/", "/people/?q=script"):
        html = owner_client.get(url).content.decode()
        assert "<script>alert" not in html and "<b>Bold" not in html, url
    assert "No suggestions" not in owner_client.get("/people/suggestions/").content.decode()
