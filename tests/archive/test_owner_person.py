"""The owner is a person from the start (issue 16): their accounts' identities and whoever
sent the messages they sent are linked to the owner's person as batches arrive (audited, by
"system"), stores made before are linked by migration 0025, and the owner never shows up
among the strangers of the People page or the suggestions."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from archive.people import services as people
from archive.people.models import IdentityLink
from archive.people.selectors import owner_person, suggestions, unlinked_identities
from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord
from archive.store.models import Identity, Person
from archive.store.sink import batch_record
from tests.factories import batch, message

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("archive.migrations.0025_owner_person_and_plurals")


def test_the_accounts_owner_is_the_owners_person_from_the_first_batch() -> None:
    batch_record(batch=batch(message("1", "hi", sender="alice")))
    owner = owner_person()
    assert owner is not None and owner.is_owner and owner.name == "Owner Person"
    assert list(owner.identities.values_list("external_id", flat=True)) == ["me"]
    (audit,) = IdentityLink.objects.filter(identity__external_id="me")
    assert (audit.action, audit.actor, audit.person_name) == ("link", "system", "Owner Person")
    # Alice is nobody's yet; the owner is not among the strangers.
    assert {i.external_id for i in unlinked_identities()} == {"alice", "bob"}


def test_whoever_sent_what_the_owner_sent_is_the_owner() -> None:
    other = AccountRecord(provider="othernet", external_id="o-1", name="Other")  # no owner
    batch_record(
        batch=Batch(
            account=other,
            chats=(ChatRecord(external_id="c", kind="dm", title="DM"),),
            identities=(IdentityRecord(external_id="self", display_name="Me Myself"),),
            messages=(
                message("1", "mine", chat="c", sender="self", direction="out"),
                message("2", "theirs", chat="c", sender="them"),
            ),
        )
    )
    owner = owner_person()
    assert owner is not None and owner.name == "Me Myself"
    batch_record(batch=batch(message("1", "hi", sender="alice")))  # a second account's owner
    assert Person.objects.filter(is_owner=True).count() == 1
    assert set(owner.identities.values_list("external_id", flat=True)) == {"self", "me"}
    assert Identity.objects.get(external_id="them").person_id is None


def test_a_batch_whose_owner_is_linked_asks_nothing_more() -> None:
    batch_record(batch=batch(message("1", "hi")))
    with CaptureQueriesContext(connection) as queries:
        batch_record(batch=batch(message("2", "again", minutes=1)))
    touched = [q["sql"] for q in queries.captured_queries if "identitylink" in q["sql"]]
    assert touched == []
    assert IdentityLink.objects.count() == 1


def test_the_owners_hand_wins_over_the_guess() -> None:
    batch_record(batch=batch(message("1", "hi")))
    owner = owner_person()
    assert owner is not None
    me = Identity.objects.get(external_id="me")
    people.identity_unlink(identity_id=me.pk, person_id=owner.pk)
    batch_record(batch=batch(message("2", "again", minutes=1)))
    assert Identity.objects.get(pk=me.pk).person_id is None  # not linked back


def test_there_is_one_owner() -> None:
    Person.objects.create(name="One", is_owner=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        Person.objects.create(name="Two", is_owner=True)


def _as_before_0025() -> None:
    """The store as a version before 0025 left it: no owner, nobody linked."""
    Identity.objects.update(person=None)
    IdentityLink.objects.all().delete()
    Person.objects.all().delete()


def test_the_migration_links_the_owner_of_a_store_made_before() -> None:
    batch_record(
        batch=batch(message("1", "hi", sender="alice"), message("2", "yo", sender="me", minutes=1))
    )
    _as_before_0025()
    MIGRATION.owner_identities_link(apps, None)
    owner = Person.objects.get(is_owner=True)
    assert owner.name == "Owner Person"
    assert list(owner.identities.values_list("external_id", flat=True)) == ["me"]
    assert list(IdentityLink.objects.values_list("actor", "action")) == [("system", "link")]
    MIGRATION.owner_identities_link(apps, None)  # again: nothing more
    assert IdentityLink.objects.count() == 1


def test_the_migration_makes_the_person_the_owner_made_of_themselves_the_owner() -> None:
    batch_record(
        batch=batch(message("1", "hi"), message("2", "mine", sender="me-too", direction="out"))
    )
    _as_before_0025()
    mine = people.person_create(name="Ann (me)")  # by hand, before 0025
    people.identity_link(identity_id=Identity.objects.get(external_id="me").pk, person_id=mine.pk)
    MIGRATION.owner_identities_link(apps, None)
    assert Person.objects.get(is_owner=True).pk == mine.pk
    assert Identity.objects.get(external_id="me-too").person_id == mine.pk


def test_the_owner_is_never_a_stranger_in_suggestions_or_the_people_page(
    owner_client: Client,
) -> None:
    shared = "owner@example.org"
    record = AccountRecord(
        provider="mailnet",
        external_id="box",
        name="Mail",
        owner=IdentityRecord(external_id=shared, display_name="Owner Person", email=shared),
    )
    batch_record(
        batch=Batch(
            account=record,
            chats=(ChatRecord(external_id="t", kind="thread", title="Hello"),),
            identities=(),
            messages=(message("m1", "hello", chat="t", sender=shared, direction="out"),),
        )
    )
    batch_record(
        batch=Batch(
            account=AccountRecord(
                provider="testnet",
                external_id="acct-1",
                name="Test",
                owner=IdentityRecord(external_id="me", display_name="Owner Person", email=shared),
            ),
            chats=(ChatRecord(external_id="chat-1", kind="group", title="Chat chat-1"),),
            identities=(IdentityRecord(external_id="alice", display_name="Alice"),),
            messages=(message("1", "hi", sender="alice"),),
        )
    )
    assert suggestions() == []  # both of the owner's identities are the owner's already
    html = owner_client.get("/people/").content.decode()
    strangers = html.split('class="list reflow loose-table"', 1)[1]
    assert "Alice" in strangers and "Owner Person" not in strangers
    owner = owner_person()
    assert owner is not None
    page = owner_client.get(f"/people/{owner.pk}/").content.decode()
    assert '<span class="badge you">you</span>' in page and "This is you" in page


def test_the_owner_flag_kept_the_triggers_on_people() -> None:
    """0025 adds the column in place: remaking archive_person would drop these."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'archive_person'"
        )
        found = {row[0] for row in cursor.fetchall()}
    assert found >= {
        "tagging_person_gone",
        "search_person_words_ai",
        "search_person_words_au",
        "search_person_words_ad",
    }


def test_the_api_says_which_person_is_the_owner(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "hi", sender="alice")))
    owner = owner_person()
    assert owner is not None
    listed = owner_client.get("/api/people").json()
    assert [(p["name"], p["is_owner"]) for p in listed] == [("Owner Person", True)]
    assert owner_client.get(f"/api/people/{owner.pk}").json()["is_owner"] is True
