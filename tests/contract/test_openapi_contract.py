"""The API's contract: schemathesis reads the OpenAPI schema the server serves (with the
caller's credentials, as an agent would) and runs every phase (examples, coverage, fuzzing,
stateful) with every one of its checks against a live server, as an agent holding every
scope and as the owner's session. Any failure fails the test, listed with the request that
reproduces it.

The checks (`checks.enabled = true`, and the test asserts each ran): not_a_server_error,
status_code_conformance, content_type_conformance, response_headers_conformance,
response_schema_conformance, positive_data_acceptance ("schema-valid request rejected"),
negative_data_rejection, missing_required_header, unsupported_method,
allow_header_conformance, use_after_free, ensure_resource_availability (these two in the
stateful phase, over the schema's links), ignored_auth and object_level_authorization.

object_level_authorization compares what one identity may read of another's objects, and
needs identities declared as peers that "must not see each other's objects" ([auth.wfc]
peers). WireCat has no such identities: the archive, people, tags and tasks are the owner's,
shared by every agent by design. The one object an agent owns, a send, is another agent's
404 (tests/archive/test_sends.py); the check runs here with no peers, so it cannot fail.

Deterministic: a fixed seed, one worker, the same archive each time, and only the schema's
own links in the stateful phase (see `run`). Bounded: `max_examples` per operation (the
coverage phase adds its boundary cases to those). About 60 s as the
agent and 35 s as the owner on two cores.
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.test import Client
from schemathesis.engine import Status, from_schema
from schemathesis.engine import events as engine_events

from archive.files.services import attachment_text_set
from archive.gateway.models import Agent
from archive.gateway.services.agents import SCOPES, agent_create
from archive.people.services import person_create
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord
from archive.store.models import Account, Attachment, Chat, Identity, Message
from archive.store.sink import batch_record
from archive.tags.services import tag_add, tag_target
from notes.services.notes import note_create
from tasks.services import project_create, task_create
from tests.contract import formats
from tests.factories import batch, message
from tests.meetings import search_factories as meetings

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SEED = 20261201
PHASES = ("examples", "coverage", "fuzzing", "stateful")
CHECKS = {
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "positive_data_acceptance",
    "negative_data_rejection",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "use_after_free",
    "ensure_resource_availability",
    "ignored_auth",
    "object_level_authorization",
}
# What negative_data_rejection takes for a refusal by default (schemathesis 4's list).
REJECTED = ["400", "401", "403", "404", "405", "406", "409", "415", "422", "428", "429", "5xx"]


@pytest.fixture
def archive(db: None) -> None:
    """Something of everything, so that requests reach past 404: two chats, people, a
    tag, a project with a task, an attachment with its bytes (and an agent's text of it)
    and one without, a meeting with a transcript, a tagged note linking to a person and a
    task."""
    blob = blob_put(io.BytesIO(b"%PDF-1.4 bytes"))
    stored = AttachmentRecord(
        external_id="f",
        file_name="a.pdf",
        mime_type="application/pdf",
        size=blob.size,
        sha256=blob.sha256,
        blob_path=blob.path,
    )
    # Imported history first: change 1 is a messages.imported row, which the coverage
    # phase's smallest `seq` reaches.
    batch_record(batch=batch(message("0", "history", sender="bob", minutes=-5)), quiet=True)
    batch_record(
        batch=batch(
            message("1", "hello there", sender="alice"),
            message("2", "second one", sender="bob", minutes=1),
            message("3", "a third, elsewhere", chat="chat-2", minutes=2),
            message(
                "4",
                "a file",
                minutes=3,
                attachments=(stored, AttachmentRecord(external_id="g", file_name="gone.pdf")),
            ),
        )
    )
    attachment_text_set(
        public_id=Attachment.objects.get(file_name="a.pdf").public_id,
        text="the plumber's invoice\fpage two",
        agent="reader",
        model="vision-1",
    )
    Account.objects.update(send_permission="ask", send_to_any_chat=True)
    Chat.objects.update(send_allowed=True)
    Identity.objects.filter(external_id="bob").update(phone="+15550001")  # alice's too
    alice = Identity.objects.get(external_id="alice")
    person_create(name="Alice", identity_ids=[alice.pk])
    first = Message.objects.order_by("id").first()
    assert first is not None
    tag_add(target=tag_target(kind="message", key=first.public_id), name="follow-up")
    project_create(key="HOME", name="Home")
    task_create(project="HOME", title="Call the plumber", messages=[first.public_id])
    planning = meetings.meeting(
        "Planning", organizer=("Alice", "alice@example.org"), participants=[("Bob", "b@x.org")]
    )
    meetings.transcript(planning, [("Alice", "the plumber comes on Friday"), ("Bob", "fine")])
    note = note_create(title="Plumbing", body="[[Alice]] knows one. See [[HOME-1]].", folder="Home")
    tag_add(target=tag_target(kind="note", key=note.public_id), name="follow-up")


@pytest.fixture
def agent_token(archive: None) -> str:
    issued = agent_create(name="contract", scopes=list(SCOPES))
    Agent.objects.filter(pk=issued.agent.pk).update(
        rate_per_minute=1_000_000, sends_per_hour=100_000
    )
    return issued.token


@pytest.fixture
def owner_session(archive: None, owner: Any) -> str:
    client = Client()
    client.force_login(owner)
    return str(client.cookies["sessionid"].value)


@pytest.fixture(scope="module", autouse=True)
def _formats() -> Iterator[None]:
    formats.register()
    yield


def run(
    base: str,
    auth: dict[str, Any],
    *,
    max_examples: int,
    headers: dict[str, str],
    schema_headers: dict[str, str],
    paths: str | None = None,
) -> tuple[list[str], dict[str, int], float]:
    """Every phase and check as the caller `auth` names (an OpenAPI security scheme and its
    credential, so that ignored_auth can take it away), with `headers` on every request,
    reading the schema as `schema_headers` say: the failures, how often each check ran, and
    how long it took. `paths` (a regular expression) runs only the operations of those
    paths, without the stateful phase."""
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "auth": {"openapi": auth},
            # Django's test server and a kept-alive connection stall ~40 ms an answer (Nagle
            # and delayed ACKs): a connection per request is three times faster here.
            "headers": {**headers, "Connection": "close"},
            "workers": 1,
            "checks": {
                "enabled": True,
                # A value over its documented size (a note's body over 1,000,000
                # characters: `maxLength`) is refused with 413 and the limit's sentence, as
                # the operation documents: a rejection as much as a 422 is.
                "negative_data_rejection": {"expected-statuses": [*REJECTED, "413"]},
            },
            "phases": {
                **{name: {"enabled": True} for name in PHASES},
                # The stateful phase follows the schema's own links only. Links inferred
                # from field names ("dependency-analysis") pick one value of a list with an
                # unseeded random choice, and schemathesis 4.32 lets it pick a null: the
                # null `chat_id` of a tag change became `/api/chats/None/messages`, a 422
                # it then called "a valid request rejected", in one CI run out of several.
                "stateful": {
                    "enabled": paths is None,  # a few operations may hold none of the links
                    "inference": {"algorithms": ["location-headers"]},
                },
            },
            "generation": {"max-examples": max_examples, "mode": "all"},
        }
    )
    started = time.monotonic()
    schema = schemathesis.openapi.from_url(
        f"{base}/api/openapi.json", config=config, headers=schema_headers
    )
    operations = schema if paths is None else schema.include(path_regex=paths)
    failures: list[str] = []
    ran: dict[str, int] = dict.fromkeys(CHECKS, 0)
    for event in from_schema(operations).execute():
        if isinstance(event, engine_events.NonFatalError | engine_events.FatalError):
            failures.append(f"error: {event}")  # e.g. a format nothing can generate
        recorder = getattr(event, "recorder", None)
        if recorder is None:
            continue
        for case_id, checks in recorder.checks.items():
            for check in checks:
                ran[check.name] = ran.get(check.name, 0) + 1
                if check.status != Status.FAILURE or check.failure_info is None:
                    continue
                failure = check.failure_info.failure
                got = ""
                answer = recorder.interactions.get(case_id)
                if answer is not None and answer.response is not None:
                    body = answer.response.content[:300].decode(errors="replace")
                    got = f"\n    -> {answer.response.status_code} {body}"
                failures.append(
                    f"{recorder.label} [{check.name}] {failure.title}: {failure.message}\n"
                    f"    {check.failure_info.code_sample}{got}"
                )
    return sorted(set(failures)), ran, time.monotonic() - started


def _verdict(failures: list[str], ran: dict[str, int], took: float) -> None:
    assert not failures, f"{len(failures)} failures in {took:.0f}s:\n" + "\n".join(failures)
    idle = sorted(name for name, times in ran.items() if not times)
    assert not idle, f"these checks never ran: {idle}"


def test_the_api_keeps_its_contract_for_an_agent(live_server: Any, agent_token: str) -> None:
    _verdict(
        *run(
            live_server.url,
            {"AgentToken": {"bearer": agent_token}},
            max_examples=10,
            headers={},
            schema_headers={"Authorization": f"Bearer {agent_token}"},  # as agents read it
        )
    )


def test_the_api_keeps_its_contract_for_the_owner(live_server: Any, owner_session: str) -> None:
    csrf = "contract" * 4  # any 32 characters: Django compares the cookie with the header
    _verdict(
        *run(
            live_server.url,
            {"SessionAuth": {"api_key": owner_session}},
            max_examples=4,  # the agent's run covers the operations; this, the session's path
            headers={"Cookie": f"csrftoken={csrf}", "X-CSRFToken": csrf},
            schema_headers={"Cookie": f"sessionid={owner_session}"},
        )
    )
