"""Logging in to the owner's Telegram account, the Sync page's three steps: the API id and
hash (from my.telegram.org) and the phone; the code Telegram sends to the owner's app; the
two-step verification password when it is on.

Each step talks to Telegram through Telethon, on a client restored from the session the
step before left; that session travels in the step's state (the sync service keeps it
sealed between the owner's requests), and the last step's session is the account's
credential for the live connector (user.py). Tests put a double at Telethon's edge
(`login_client`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, TypeVar

from telethon import TelegramClient, errors
from telethon.sessions import StringSession

from archive.connectors.live import LoginError, LoginStep
from archive.connectors.telegram.user import UNREACHABLE, unreachable

T = TypeVar("T")


def _login_client(session: str, api_id: int, api_hash: str) -> Any:
    return TelegramClient(StringSession(session), api_id, api_hash)


# The client a login step talks through; tests put a double at this edge.
login_client: Callable[[str, int, str], Any] = _login_client


@dataclass(frozen=True)
class LoginState:
    """Where a login stands between the page's steps."""

    api_id: int
    api_hash: str
    phone: str
    session: str
    phone_code_hash: str = ""
    step: str = "code"  # "code", then "password" when two-step verification is on


def _login_run(state: LoginState, work: Callable[[Any], Awaitable[T]]) -> tuple[T, str]:
    """Run one step on a client restored from `state`; returns its result and the session
    as it stands afterwards."""

    async def step() -> tuple[T, str]:
        client = login_client(state.session, state.api_id, state.api_hash)
        await client.connect()
        try:
            result = await work(client)
            return result, client.session.save()
        finally:
            await client.disconnect()

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(step())
    except errors.FloodWaitError as exc:
        raise LoginError(f"Telegram asks to wait {exc.seconds} s before trying again") from None
    except (errors.PhoneNumberInvalidError, errors.PhoneNumberBannedError):
        raise LoginError("phone: Telegram does not know this number") from None
    except (errors.PhoneCodeInvalidError, errors.PhoneCodeEmptyError):
        raise LoginError("code: not the code Telegram sent") from None
    except errors.PhoneCodeExpiredError:
        raise LoginError("code: expired; start again for a new one") from None
    except errors.PasswordHashInvalidError:
        raise LoginError("password: not your two-step verification password") from None
    except (errors.ApiIdInvalidError, errors.ApiIdPublishedFloodError):
        raise LoginError("API id and hash: refused (from my.telegram.org → API tools)") from None
    except errors.RPCError as exc:
        raise LoginError(f"Telegram refused: {type(exc).__name__}") from None
    except UNREACHABLE as exc:
        raise LoginError(unreachable(exc)) from None
    finally:
        loop.close()


def login_start(*, api_id: int, api_hash: str, phone: str) -> LoginState:
    """Ask Telegram to send the login code to the owner's app."""
    state = LoginState(api_id=api_id, api_hash=api_hash, phone=phone, session="")
    sent, session = _login_run(state, lambda client: client.send_code_request(phone))
    return replace(state, session=session, phone_code_hash=str(sent.phone_code_hash))


def login_code(state: LoginState, code: str) -> LoginState:
    """Sign in with the code. The new state's step is "done", or "password" when the
    two-step verification password is needed next."""

    async def sign_in(client: Any) -> bool:
        try:
            await client.sign_in(
                phone=state.phone, code=code, phone_code_hash=state.phone_code_hash
            )
        except errors.SessionPasswordNeededError:
            return False
        return True

    done, session = _login_run(state, sign_in)
    return replace(state, session=session, step="done" if done else "password")


def login_password(state: LoginState, password: str) -> LoginState:
    _, session = _login_run(state, lambda client: client.sign_in(password=password))
    return replace(state, session=session, step="done")


# the live login port (archive/connectors/live.py) ---------------------------------------


def _stepped(state: LoginState) -> LoginStep:
    if state.step != "done":
        return LoginStep(step=state.step, state=asdict(state))
    return LoginStep(
        step="done",
        credentials={"session": state.session, "api_id": state.api_id, "api_hash": state.api_hash},
    )


class TelegramLogin:
    """The login of `telegram_user`. The page's fields are checked before Telegram is
    asked, so a typing slip is named as one."""

    def start(self, fields: Mapping[str, str]) -> LoginStep:
        """Step 1: Telegram sends a code to the owner's app."""
        api_id = fields.get("api_id", "").strip()
        api_hash = fields.get("api_hash", "").strip().lower()
        if not api_id.isdigit() or len(api_id) > 12:
            raise LoginError("API id: the number from my.telegram.org → API development tools")
        if len(api_hash) != 32 or any(c not in "0123456789abcdef" for c in api_hash):
            raise LoginError("API hash: the 32 hexadecimal characters from my.telegram.org")
        digits = fields.get("phone", "").strip().removeprefix("+")
        digits = digits.replace(" ", "").replace("-", "")
        if not digits.isdigit() or not 6 <= len(digits) <= 15:
            raise LoginError(
                "phone: the account's number with its country code, e.g. +44 7700 900123"
            )
        return _stepped(login_start(api_id=int(api_id), api_hash=api_hash, phone=f"+{digits}"))

    def advance(self, state: Mapping[str, Any], fields: Mapping[str, str]) -> LoginStep:
        """Step 2 (the code) or 3 (the two-step password)."""
        try:
            current = LoginState(**state)
        except TypeError as exc:
            raise LoginError("the login has expired; start again") from exc
        if current.step == "code":
            code = fields.get("code", "").strip()
            if not code.isdigit():
                raise LoginError("code: the digits Telegram sent to your app")
            return _stepped(login_code(current, code))
        if current.step == "password":
            password = fields.get("password", "")
            if not password:
                raise LoginError("password: needed")
            return _stepped(login_password(current, password))
        raise LoginError("the login has ended; start again")


LOGIN = TelegramLogin()
