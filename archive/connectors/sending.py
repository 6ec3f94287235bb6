"""The send port: what a connector implements to deliver an outbound message.

A provider's live connector (the live-sync work) registers a sender for its provider; the
send service hands it each allowed message after its transaction commits and records the
outcome. Nothing here touches the ORM: a sender gets plain values and returns the
provider's id for the sent message, or raises SendError with a reason fit to show."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class OutboundMessage:
    account_external_id: str
    chat_external_id: str
    text: str
    reply_to_external_id: str | None
    send_id: str  # snd_…: lets a provider that supports it de-duplicate


class SendError(Exception):
    """The provider refused or could not be reached; the message says why (no secrets)."""


Sender = Callable[[OutboundMessage], str]
_SENDERS: dict[str, Sender] = {}


def register_sender(provider: str, sender: Sender) -> None:
    _SENDERS[provider] = sender


def unregister_sender(provider: str) -> None:
    _SENDERS.pop(provider, None)


def sender_for(provider: str) -> Sender | None:
    return _SENDERS.get(provider)
