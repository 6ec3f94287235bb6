"""The audit actor of a tag and of an identity link is the agent that made it, whole:
"agent:" and a name of up to 100 characters fit (and pass the models' validation, which the
admin site applies)."""

from __future__ import annotations

import pytest
from django.test import Client

from archive.gateway.services.agents import agent_create
from archive.people.models import IdentityLink
from archive.people.services import person_create
from archive.store.models import Identity, Message
from archive.store.sink import batch_record
from archive.tags.models import Tagging
from tests.factories import batch, message

pytestmark = pytest.mark.django_db

NAME = "a" * 100  # the longest name an agent may have


def test_an_agent_with_the_longest_name_is_the_actor_whole() -> None:
    batch_record(batch=batch(message("1", "hello", sender="alice")))
    issued = agent_create(name=NAME, scopes=["tags.write", "people.write"])
    agent = Client(headers={"authorization": f"Bearer {issued.token}"})
    msg = Message.objects.get()
    tagged = agent.post(
        "/api/tags/add",
        {"kind": "message", "key": msg.public_id, "name": "follow-up"},
        content_type="application/json",
    )
    assert tagged.status_code == 200, tagged.content
    person = person_create(name="Alice")
    alice = Identity.objects.get(external_id="alice")
    linked = agent.post(
        f"/api/people/{person.pk}/link",
        {"identity_id": alice.pk},
        content_type="application/json",
    )
    assert linked.status_code == 200, linked.content
    for row in (Tagging.objects.get(), IdentityLink.objects.exclude(actor="system").get()):
        assert row.actor == f"agent:{NAME}"
        row.full_clean()  # 106 characters: within the field's length
