"""Connecting an account step by step on the Sync page (the owner's Telegram account).

The provider's login (a `LiveLogin` in its package, found through the live registry) knows
the steps and checks each one's fields; this keeps the state between the owner's requests
sealed like any credential, and connects the account once the login is done."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from archive.connectors.live import LiveError, LoginStep, live_login
from archive.sync.credentials import SealedError, seal, unseal
from archive.sync.models import SyncAccount
from archive.sync.services.accounts import sync_connect
from wirecat.errors import Invalid


@dataclass(frozen=True)
class LoginProgress:
    """Where a login stands for the page: the sealed state the next step needs ("" once
    done), that step's name, and once done the connected account."""

    sealed: str
    step: str
    sync: SyncAccount | None = None


def live_login_start(
    *, kind: str, fields: Mapping[str, str], interval_seconds: int = 300
) -> LoginProgress:
    """The first step of logging in to an account of connector `kind`."""
    try:
        step = live_login(kind).start(fields)
    except LiveError as exc:  # LoginError, or the provider not reached
        raise Invalid(str(exc)) from None
    return _progress(kind, step, interval_seconds=interval_seconds)


def live_login_advance(
    *, kind: str, sealed: str, fields: Mapping[str, str], interval_seconds: int = 300
) -> LoginProgress:
    """The next step, from the state the last one left."""
    try:
        state = unseal(sealed)
    except SealedError as exc:
        raise Invalid("the login has expired; start again") from exc
    try:
        step = live_login(kind).advance(state, fields)
    except LiveError as exc:
        raise Invalid(str(exc)) from None
    return _progress(kind, step, interval_seconds=interval_seconds)


def _progress(kind: str, step: LoginStep, *, interval_seconds: int) -> LoginProgress:
    """The step's state sealed for the next one; or, once the login is done, the account
    connected (its credentials sealed like any other's) and scheduled."""
    if step.credentials is None:
        return LoginProgress(sealed=seal(step.state), step=step.step)
    sync = sync_connect(kind=kind, credentials=step.credentials, interval_seconds=interval_seconds)
    return LoginProgress(sealed="", step=step.step, sync=sync)
