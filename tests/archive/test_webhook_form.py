"""The new-endpoint form on the Webhooks page: after an error it comes back as it was sent
(the events ticked stay ticked: none ticked means every event, so losing them widened the
endpoint on the next try), and a refused address is said in a sentence."""

from __future__ import annotations

import re
import socket
from typing import Any

import pytest
from django.test import Client

from archive.gateway.models import WebhookEndpoint
from archive.gateway.services import webhooks

pytestmark = pytest.mark.django_db


def ticked(html: str) -> list[str]:
    return re.findall(r'name="events" value="([^"]+)" checked', html)


def test_a_form_error_keeps_the_events_ticked(owner_client: Client) -> None:
    events = ["send.status", "tag.changed"]
    answer = owner_client.post(
        "/webhooks/", {"url": "ftp://example.org/hook", "events": events, "secret": "s3"}
    )
    html = answer.content.decode()
    assert answer.status_code == 422 and "only http:// and https://" in html
    assert ticked(html) == events
    assert 'value="ftp://example.org/hook"' in html and 'value="s3"' in html
    assert not WebhookEndpoint.objects.exists()
    # A fresh page ticks nothing (every event), and shows no secret.
    fresh = owner_client.get("/webhooks/").content.decode()
    assert ticked(fresh) == [] and 'value="s3"' not in fresh


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:9/hook", "url: 127.0.0.1 is a loopback address (this machine itself)."),
        ("http://10.0.0.8/hook", "url: 10.0.0.8 is an address on a private network."),
        (
            "http://hooks.example/hook",
            "url: hooks.example resolves to 192.168.1.20, an address on a private network.",
        ),
        (
            "http://meta.example/x",
            "url: meta.example resolves to 169.254.169.254, a cloud metadata address:",
        ),
    ],
)
def test_a_refused_address_is_said_in_a_sentence(
    owner_client: Client, monkeypatch: pytest.MonkeyPatch, url: str, said: str
) -> None:
    names = {"hooks.example": "192.168.1.20", "meta.example": "169.254.169.254"}
    real = socket.getaddrinfo

    def resolve(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in names:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (names[host], port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(webhooks.socket, "getaddrinfo", resolve)
    answer = owner_client.post("/webhooks/", {"url": url, "events": ["message.inbound"]})
    html = answer.content.decode()
    assert answer.status_code == 422
    assert said in html.replace("&#x27;", "'")
    address = said.split(" ")[1]
    assert f"{address} is {address}" not in html  # the old "127.0.0.1 is 127.0.0.1, …"
    assert ticked(html) == ["message.inbound"]
