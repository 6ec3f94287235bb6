"""The send port's senders: an outbound message goes out through the live connection of
the account it is sent from."""

from __future__ import annotations

import functools

from archive.connectors.live import (
    LIVE_CONNECTORS,
    LiveError,
    live_connector_class,
    sending_providers,
)
from archive.connectors.sending import OutboundMessage, SendError, register_sender
from archive.sync.credentials import SealedError
from archive.sync.models import SyncAccount
from archive.sync.services.accounts import sync_opened


def _send_live(message: OutboundMessage, *, provider: str) -> str:
    sync = (
        SyncAccount.objects.select_related("account")
        .filter(account__provider=provider, account__external_id=message.account_external_id)
        .first()
    )
    if sync is None:
        raise SendError(f"account {message.account_external_id!r} has no live connection")
    try:
        connector = sync_opened(sync)
    except (LiveError, SealedError) as exc:
        raise SendError(str(exc)) from None
    try:
        if not connector.capabilities.send:
            raise SendError(f"{connector.label} cannot send")
        return connector.send(message)
    finally:
        connector.close()


def _live_unready(account_external_id: str, *, provider: str) -> str:
    """Why the account cannot send now ("" when it can): it needs a live connection whose
    connector sends (an account known only from an export has none)."""
    sync = (
        SyncAccount.objects.select_related("account")
        .filter(account__provider=provider, account__external_id=account_external_id)
        .first()
    )
    if sync is None:
        return (
            "this account has no live connection (it is known from an export only), so"
            " nothing can be sent from it — connect it on the Sync page first"
        )
    entry = LIVE_CONNECTORS.get(sync.kind)
    if entry is None or not entry.sends:
        kind = live_connector_class(sync.kind)
        label = kind.label if kind is not None else sync.kind
        return f"this account's live connection ({label}) cannot send messages"
    return ""


def senders_register() -> None:
    """A sender for every provider the live registry says sends (archive/connectors/live.py),
    with its readiness: whether an account has the live connection a send needs."""
    for provider in sending_providers():
        register_sender(
            provider,
            functools.partial(_send_live, provider=provider),
            readiness=functools.partial(_live_unready, provider=provider),
        )
