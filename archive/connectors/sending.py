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
# Why an account of the provider cannot send now ("" when it can): given the account's
# external id. A sender registered without one can always be handed a message.
Readiness = Callable[[str], str]
_SENDERS: dict[str, Sender] = {}
_READINESS: dict[str, Readiness] = {}


def register_sender(provider: str, sender: Sender, *, readiness: Readiness | None = None) -> None:
    _SENDERS[provider] = sender
    if readiness is None:
        _READINESS.pop(provider, None)
    else:
        _READINESS[provider] = readiness


def unregister_sender(provider: str) -> None:
    _SENDERS.pop(provider, None)
    _READINESS.pop(provider, None)


def send_unready(provider: str, account_external_id: str) -> str:
    """Why a message from this account could not go out now, as a sentence ("" when it
    could): no sender for its provider, or the sender's own reason (no live connection)."""
    if provider not in _SENDERS:
        return f"WireCat cannot send {provider} messages yet"
    readiness = _READINESS.get(provider)
    return readiness(account_external_id) if readiness is not None else ""


def sender_for(provider: str) -> Sender | None:
    return _SENDERS.get(provider)
