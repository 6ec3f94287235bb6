"""The API's contract: schemathesis generates requests for every operation in the OpenAPI
schema and sends them to a live server as an agent holding every scope. No answer may be a
5xx, every status must be one the schema documents, and every body must match it."""

from __future__ import annotations

import json
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from archive.gateway.models import Agent
from archive.gateway.services.agents import SCOPES, agent_create
from archive.store.models import Account, Chat
from archive.store.sink import batch_record
from tests.factories import batch, message

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def api_schema(db: None) -> Any:
    from wirecat.api import api

    spec = json.loads(json.dumps(api.get_openapi_schema(), default=str))
    return schemathesis.openapi.from_dict(spec)


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.fixture
def agent_token(db: None) -> str:
    batch_record(batch=batch(message("1", "hello there"), message("2", "second one", minutes=1)))
    Account.objects.update(send_permission="ask", send_to_any_chat=True)
    Chat.objects.update(send_allowed=True)
    issued = agent_create(name="contract", scopes=list(SCOPES))
    Agent.objects.filter(pk=issued.agent.pk).update(rate_per_minute=100_000, sends_per_hour=100_000)
    return issued.token


@schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_keeps_its_contract(case: Any, live_server: Any, agent_token: str) -> None:
    response = case.call(
        base_url=live_server.url, headers={"Authorization": f"Bearer {agent_token}"}, timeout=30
    )
    case.validate_response(
        response,
        checks=[not_a_server_error, status_code_conformance, response_schema_conformance],
    )
