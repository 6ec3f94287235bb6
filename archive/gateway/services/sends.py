"""Sends: an agent (or the owner) asks to send a message; the guard decides; allowed sends
are written as outbound messages and handed to the account's connector after commit.

The guard, in order, each refusal naming its rule: the agent's limits (accounts and
chats), the global read-only lock, the account's
permission (deny | read-only | ask | allow), the account's recipient allow-list, the hourly
limit of the account, the hourly limit of the agent. "ask" waits for the owner. Every
attempt is a journal row (SendAttempt) — never the text, which lives only in the outbound
message row."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from archive.connectors.sending import OutboundMessage, SendError, send_unready, sender_for
from archive.gateway.models import Agent, GatewaySettings, SendAttempt, SendOutcome
from archive.gateway.selectors import agent_sees_chat
from archive.store import changes
from archive.store.effects import on_commit_effect
from archive.store.ids import new_public_id
from archive.store.models import Account, Chat, DeliveryStatus, Message, SendPermission
from archive.store.sink import delivery_set, outbound_record
from wirecat.errors import Conflict, Forbidden, Invalid, NotFound

log = logging.getLogger(__name__)

TEXT_MAX = 10_000
_COUNTED = (SendOutcome.AWAITING, SendOutcome.QUEUED, SendOutcome.SENT, SendOutcome.FAILED)


class SendRefused(Forbidden):
    """The guard said no; `rule` names which rule and `send_id` the journal row."""

    def __init__(self, message: str, rule: str, send_id: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.send_id = send_id


# The effect of a send that may go out: the gateway's jobs hand it to the connector.
SEND_QUEUED = "gateway.send_queued"


def _status_changed(attempt: SendAttempt) -> None:
    """A send.status change (feed and webhooks), in the transaction of the change; a send
    that may now go out is handed on once that transaction commits."""
    changes.send_status_changed(
        send_id=attempt.pk, message_id=attempt.message_id, chat_id=attempt.chat_id
    )
    if attempt.outcome == SendOutcome.QUEUED:
        on_commit_effect(SEND_QUEUED, attempt_id=attempt.pk)


def gateway_settings() -> GatewaySettings:
    found, _ = GatewaySettings.objects.get_or_create(pk=1)
    return found


def _guard(agent: Agent | None, account: Account, chat: Chat) -> tuple[str, str] | None:
    """(rule, why) of the first rule that refuses, or None."""
    who = f"account {account.name or account.external_id!r}"
    if agent is not None and not agent_sees_chat(agent, chat):
        return "agent-limits", f"chat {chat.pk} is outside the limits of agent {agent.name!r}"
    if gateway_settings().read_only:
        return "read-only-lock", "sending is locked: the owner's read-only switch is on"
    if account.send_permission == SendPermission.DENY:
        return "permission", f"{who}: sending is denied (permission: deny)"
    if account.send_permission == SendPermission.READ_ONLY:
        return "permission", f"{who} is read-only (permission: read-only)"
    if not (account.send_to_any_chat or chat.send_allowed):
        return "allow-list", f"chat {chat.pk} is not on the allow-list of {who}"
    hour_ago = timezone.now() - timedelta(hours=1)
    recent = SendAttempt.objects.filter(at__gte=hour_ago, outcome__in=_COUNTED)
    if recent.filter(account=account).count() >= account.sends_per_hour:
        return "account-hourly-limit", f"{who}: {account.sends_per_hour} sends an hour reached"
    if agent is not None and recent.filter(agent=agent).count() >= agent.sends_per_hour:
        return (
            "agent-hourly-limit",
            f"agent {agent.name!r}: {agent.sends_per_hour} sends an hour reached",
        )
    return None


def send_request(
    *, agent: Agent | None, account_id: int, chat_id: int, text: str, reply_to: str | None = None
) -> SendAttempt:
    """Ask to send `text` to a chat of an account. Returns the journal row: AWAITING (the
    owner decides) or QUEUED (handed to `send_deliver` once the transaction commits).
    SendRefused (403) when the guard refuses, after journaling the refusal."""
    if not text.strip():
        raise Invalid("text: empty")
    if len(text) > TEXT_MAX:
        raise Invalid(f"text: at most {TEXT_MAX:,} characters")
    account = Account.objects.filter(pk=account_id).first()
    if account is None:
        raise NotFound(f"account: no account {account_id}")
    chat = Chat.objects.select_related("account").filter(pk=chat_id).first()
    if chat is None or chat.account_id != account.pk:
        raise NotFound(f"chat: no chat {chat_id} in account {account_id}")
    parent = None
    if reply_to:
        parent = Message.objects.filter(public_id=reply_to, chat=chat).first()
        if parent is None:
            raise NotFound(f"reply_to: no message {reply_to[:40]!r} in chat {chat_id}")
    with transaction.atomic():
        attempt = SendAttempt(
            public_id=new_public_id("snd"), agent=agent, account=account, chat=chat
        )
        refusal = _guard(agent, account, chat)
        if refusal is not None:
            attempt.outcome, attempt.rule = SendOutcome.REFUSED, refusal[0]
            attempt.error, attempt.finished_at = refusal[1], timezone.now()
            attempt.save()
        else:
            ask = account.send_permission == SendPermission.ASK
            attempt.outcome = SendOutcome.AWAITING if ask else SendOutcome.QUEUED
            status = DeliveryStatus.AWAITING if ask else DeliveryStatus.PENDING
            attempt.message = outbound_record(
                chat=chat, text=text, send_id=attempt.public_id, reply_to=parent, status=status
            )
            attempt.save()
            _status_changed(attempt)
    if refusal is not None:
        raise SendRefused(f"send refused: {refusal[1]}", refusal[0], attempt.public_id)
    return attempt


def send_get(*, send_id: str) -> SendAttempt:
    attempt = (
        SendAttempt.objects.select_related("message", "account", "chat", "agent")
        .filter(public_id=send_id)
        .first()
    )
    if attempt is None:
        raise NotFound(f"send {send_id[:40]!r} does not exist")
    return attempt


def _awaiting(send_id: str) -> SendAttempt:
    attempt = send_get(send_id=send_id)
    if attempt.outcome != SendOutcome.AWAITING:
        raise Conflict(f"send {send_id}: {attempt.get_outcome_display().lower()}, not awaiting")
    return attempt


def send_permission_check(*, account: Account, permission: str) -> None:
    """Invalid when `permission` would let messages go (ask, allow) from an account that
    cannot send them: no live connection (an account known from an export only)."""
    if permission not in (SendPermission.ASK, SendPermission.ALLOW):
        return
    why = send_unready(account.provider, account.external_id)
    if why:
        label = SendPermission(permission).label
        raise Invalid(f"“{label}” cannot be set for {account}: {why}.")


@transaction.atomic
def send_approve(*, send_id: str) -> SendAttempt:
    """The owner lets an awaiting send go: QUEUED (handed on once the transaction commits).
    Conflict when its account cannot send now (no live connection): approving would only
    make it fail."""
    attempt = _awaiting(send_id)
    account = attempt.account
    why = send_unready(account.provider, account.external_id) if account is not None else ""
    if why:
        raise Conflict(
            f"Send {send_id} cannot be approved: {why}. Refuse it, or connect the account"
            " and approve it then."
        )
    attempt.outcome = SendOutcome.QUEUED
    attempt.save(update_fields=["outcome"])
    _status_changed(attempt)
    if attempt.message_id:
        delivery_set(message_id=attempt.message_id, status=DeliveryStatus.PENDING)
    return attempt


@transaction.atomic
def send_reject(*, send_id: str) -> SendAttempt:
    attempt = _awaiting(send_id)
    attempt.outcome, attempt.finished_at = SendOutcome.REJECTED, timezone.now()
    attempt.save(update_fields=["outcome", "finished_at"])
    _status_changed(attempt)
    if attempt.message_id:
        delivery_set(message_id=attempt.message_id, status=DeliveryStatus.REFUSED)
    return attempt


def send_deliver(*, attempt_id: int) -> SendAttempt:
    """Hand a queued send to its account's connector (outside any transaction: the call
    is network I/O) and record SENT or FAILED. Idempotent: only QUEUED sends go out."""
    attempt = (
        SendAttempt.objects.select_related("message", "account", "chat")
        .filter(pk=attempt_id)
        .first()
    )
    if attempt is None:
        raise NotFound(f"send {attempt_id} does not exist")
    if attempt.outcome != SendOutcome.QUEUED or attempt.message is None:
        return attempt
    account, chat, message = attempt.account, attempt.chat, attempt.message
    assert account is not None and chat is not None
    sender = sender_for(account.provider)
    provider_id, error = "", ""
    if sender is None:
        error = f"no connector can send for {account.provider} yet"
    else:
        parent = message.reply_to
        try:
            provider_id = sender(
                OutboundMessage(
                    account_external_id=account.external_id,
                    chat_external_id=chat.external_id,
                    text=message.text,
                    reply_to_external_id=parent.external_id if parent else None,
                    send_id=attempt.public_id,
                )
            )
        except SendError as exc:
            error = str(exc)[:500]
        except OSError as exc:  # the provider could not be reached
            error = f"could not reach {account.provider}: {type(exc).__name__}"
    with transaction.atomic():
        attempt.outcome = SendOutcome.FAILED if error else SendOutcome.SENT
        attempt.error, attempt.finished_at = error, timezone.now()
        attempt.save(update_fields=["outcome", "error", "finished_at"])
        _status_changed(attempt)
        delivery_set(
            message_id=message.pk,
            status=DeliveryStatus.FAILED if error else DeliveryStatus.SENT,
            provider_id=provider_id,
        )
    log.info("send %s: %s", attempt.public_id, attempt.outcome)  # never the text
    return attempt
