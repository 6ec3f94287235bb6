"""The statistics API (`GET /api/stats/...`) over the small hand-made store: the same
numbers as the selectors, behind an agent's token with `stats.read` (refused without it,
and held to its chats when it is limited), bad input answered 422/404 naming the field,
and the OpenAPI contract kept (schemathesis, every check, against a live server)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from archive.gateway.services.agents import SCOPES, agent_create, agent_limit
from archive.store.models import Message
from tests.contract import formats
from tests.contract import test_openapi_contract as contract
from tests.stats.store import stats_store

pytestmark = pytest.mark.django_db

MARCH = {"since": "2024-03-01", "until": "2024-03-10"}


@pytest.fixture
def store(settings: Any) -> dict[str, Any]:
    settings.TIME_ZONE = "Europe/Berlin"
    return stats_store()


def _auth(*scopes: str) -> dict[str, Any]:
    token = agent_create(name=f"agent {len(scopes)} {'-'.join(scopes)}", scopes=scopes).token
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def _get(path: str, auth: dict[str, Any], **params: Any) -> Any:
    return Client().get(f"/api/stats/{path}", params, **auth)


def test_the_five_answers(store: dict[str, Any]) -> None:
    auth = _auth("stats.read")
    volume = _get("volume", auth, **MARCH, unit="week").json()
    assert volume["scope"] == {
        "since": "2024-03-01",
        "until": "2024-03-10",
        "time_zone": "Europe/Berlin",
        "account": None,
        "chat": None,
        "person": None,
        "described": "all chats, 1 Mar 2024 \u2013 10 Mar 2024",
    }
    assert volume["buckets"] == [
        {"start": "2024-02-26", "count": 7},
        {"start": "2024-03-04", "count": 7},
    ]
    assert (volume["total"], volume["sent"]) == (14, 5)

    cells = _get("heatmap", auth, **MARCH).json()
    assert (cells["peak"], cells["total"], cells["cells"][5][13]) == (3, 13, 3)

    top = _get("top", auth, **MARCH, most=1).json()
    assert [(t["kind"], t["name"], t["count"]) for t in top["chats"]] == [("chat", "The group", 9)]
    assert [(t["kind"], t["name"], t["count"]) for t in top["people"]] == [("person", "Alice", 6)]

    waiting = _get("unanswered", auth, **MARCH, within=48).json()
    g7 = Message.objects.get(external_id="g7").public_id
    assert (waiting["total"], waiting["within_hours"]) == (3, 48)
    assert [i["why"] for i in waiting["items"]] == ["question", "direct message", "mention"]
    assert waiting["items"][0]["message_id"] == g7
    assert waiting["items"][1]["waiting"] == 2

    answers = _get("responses", auth, **MARCH, unit="week").json()
    assert (answers["count"], answers["median"], answers["p90"]) == (4, 129600.0, 432000.0)
    assert answers["over_time"][1] == {
        "start": "2024-03-04",
        "median": 432000.0,
        "p90": 432000.0,
        "count": 1,
    }


def test_one_chat_and_one_person(store: dict[str, Any]) -> None:
    auth = _auth("stats.read")
    dm = _get("volume", auth, **MARCH, chat=store["dm"].pk).json()
    assert (dm["total"], dm["scope"]["chat"]) == (5, store["dm"].pk)
    alice = _get("unanswered", auth, **MARCH, person=store["alice"].pk).json()
    assert [i["why"] for i in alice["items"]] == ["direct message"]


def test_the_scope_is_needed(store: dict[str, Any]) -> None:
    assert Client().get("/api/stats/volume").status_code == 401
    refused = _get("volume", _auth("messages.read"), **MARCH)
    assert refused.status_code == 403
    assert refused.json()["error"] == "Forbidden" and "stats.read" in refused.json()["detail"]


def test_an_agent_limited_to_a_chat_sees_only_that_chat(store: dict[str, Any]) -> None:
    issued = agent_create(name="limited", scopes=["stats.read"])
    agent_limit(public_id=issued.agent.public_id, chat_ids=[store["dm"].pk])
    auth: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {issued.token}"}
    whole = _get("volume", auth, **MARCH)
    assert whole.status_code == 403 and whole.json()["detail"].startswith("chat: ")
    other = _get("volume", auth, **MARCH, chat=store["grp"].pk)
    assert other.status_code == 404
    mine = _get("volume", auth, **MARCH, chat=store["dm"].pk)
    assert mine.status_code == 200 and mine.json()["total"] == 5


@pytest.mark.parametrize(
    ("params", "status", "field"),
    [
        ({"since": "2024-02-30"}, 422, "since"),
        ({"since": "yesterday"}, 422, "since"),
        ({"until": "2024-3-1"}, 422, "until"),
        ({"chat": "999999"}, 404, "chat"),
        ({"person": "999999"}, 404, "person"),
        ({"account": "999999"}, 404, "account"),
        ({"account": "0"}, 422, "account"),
        ({"unit": "year"}, 422, "unit"),
    ],
)
def test_bad_input_names_the_field(
    store: dict[str, Any], params: dict[str, str], status: int, field: str
) -> None:
    answer = _get("volume", _auth("stats.read"), **params)
    assert answer.status_code == status, answer.content
    assert field in answer.json()["detail"]


def test_ranges_the_schema_allows_are_answered_and_the_scope_says_how(
    store: dict[str, Any],
) -> None:
    """As the meetings' window: an agent's request the schema allows is answered; a range
    over 20 years is cut (to 20 x 366 days), far dates are moved in, and until before
    since is an empty range."""
    auth = _auth("stats.read")
    backwards = _get("volume", auth, since="2024-03-05", until="2024-03-01", unit="day").json()
    assert (backwards["buckets"], backwards["total"]) == ([], 0)
    long = _get("volume", auth, since="1990-01-01", until="2024-03-10").json()["scope"]
    assert (long["since"], long["until"]) == ("2004-02-25", "2024-03-10")
    far = _get("heatmap", auth, since="0001-01-01", until="9999-12-31").json()["scope"]
    assert (far["since"], far["until"]) == ("2979-12-17", "2999-12-31")
    other = _get("volume", auth, account=store["dm"].account_id + 1, chat=store["dm"].pk)
    assert other.status_code == 404 and other.json()["detail"].startswith("account: ")


@pytest.mark.parametrize(
    ("path", "params"),
    [("unanswered", {"within": "0"}), ("unanswered", {"within": "721"}), ("top", {"most": "101"})],
)
def test_bounds_are_refused(store: dict[str, Any], path: str, params: dict[str, str]) -> None:
    answer = _get(path, _auth("stats.read"), **params)
    assert answer.status_code == 422, answer.content
    assert next(iter(params)) in answer.json()["detail"]


@pytest.mark.django_db(transaction=True)
def test_the_stats_api_keeps_its_contract(live_server: Any, settings: Any) -> None:
    settings.TIME_ZONE = "Europe/Berlin"
    stats_store()
    token = agent_create(name="contract", scopes=list(SCOPES)).token
    formats.register()
    failures, ran, took = contract.run(
        live_server.url,
        {"AgentToken": {"bearer": token}},
        max_examples=25,
        headers={},
        schema_headers={"Authorization": f"Bearer {token}"},
        paths="^/api/stats/",
    )
    assert not failures, f"{len(failures)} failures in {took:.0f}s:\n" + "\n".join(failures)
    idle = sorted(name for name, times in ran.items() if not times)
    # The stateful checks follow the schema's links, which read-only statistics give none of.
    assert set(idle) <= {"use_after_free", "ensure_resource_availability"}, idle
