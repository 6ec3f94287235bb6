"""Sign-in guessing: at most `LOGIN_ATTEMPTS` failures per user name and per client address
within `LOGIN_WINDOW_SECONDS`, on `/login/`, `/admin/login/` and the one-time code page.

The check runs before the view, so a locked attempt is answered 429 (with Retry-After)
without hashing its password: each Argon2 hash costs a worker tens of milliseconds, which is
what guessing at speed starves. An attempt takes its slot before the view runs (one short
transaction: count, then add), so parallel posts cannot all slip under the limit; a slot is
given back when the attempt turns out not to be a guess (signed in, or a form error that is
no credential), and a success clears the address's and the user name's failures.

The failures are kept in a small SQLite file of their own in the state folder
(`login-throttle.db`), not in the store: every web worker sees the same counts (Django's
default cache is per process), a failure never waits behind an import's write transaction
on the store's single writer, and there is no migration. Rows older than the window are
deleted as new ones come.

The client address is the connection's. Behind a tunnel, the header the tunnel sets is
named by `WIRECAT_CLIENT_IP_HEADER` (its last entry, the one the tunnel added); no header
is believed otherwise. IPv6 addresses count by their /64, what one client usually holds.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.urls import Resolver404, resolve

log = logging.getLogger("wirecat.security")

FILE_NAME = "login-throttle.db"
# The views that check a secret, and whether their form names a user.
PASSWORD_VIEWS = {"login", "admin:login"}
CODE_VIEWS = {"login_code"}


@dataclass(frozen=True)
class Attempt:
    keys: tuple[str, ...]
    slots: tuple[int, ...]  # the failure rows it counts as until it proves otherwise


def _path() -> Path:
    return Path(settings.STATE_DIR) / FILE_NAME


@contextmanager
def _store() -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(_path(), timeout=10, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS failures"
            " (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, at REAL NOT NULL)"
        )
        db.execute("CREATE INDEX IF NOT EXISTS failures_key_at ON failures (key, at)")
        db.execute("CREATE INDEX IF NOT EXISTS failures_at ON failures (at)")
        yield db


def attempt_begin(keys: tuple[str, ...]) -> Attempt | int:
    """Take a slot for one attempt under `keys`; or, when one of them is used up, the
    seconds until it has a slot again."""
    limit = max(1, int(settings.LOGIN_ATTEMPTS))
    window = float(settings.LOGIN_WINDOW_SECONDS)
    now = time.time()
    with _store() as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM failures WHERE at <= ?", (now - window,))
            wait = 0.0
            for key in keys:
                times = [
                    row[0]
                    for row in db.execute(
                        "SELECT at FROM failures WHERE key = ? ORDER BY at", (key,)
                    )
                ]
                if len(times) >= limit:
                    wait = max(wait, times[len(times) - limit] + window - now)
            if wait > 0:
                db.execute("COMMIT")
                return max(1, math.ceil(wait))
            insert = "INSERT INTO failures (key, at) VALUES (?, ?)"
            slots = tuple(int(db.execute(insert, (key, now)).lastrowid or 0) for key in keys)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return Attempt(keys=keys, slots=slots)


def attempt_release(attempt: Attempt) -> None:
    """The attempt was no guess (a form error that is no credential): give its slot back."""
    with _store() as db:
        db.executemany("DELETE FROM failures WHERE id = ?", [(slot,) for slot in attempt.slots])


def failures_clear(keys: tuple[str, ...]) -> None:
    """A success: the address and the user name start afresh."""
    with _store() as db:
        db.executemany("DELETE FROM failures WHERE key = ?", [(key,) for key in keys])


def failures_count(key: str) -> int:
    window = float(settings.LOGIN_WINDOW_SECONDS)
    with _store() as db:
        row = db.execute(
            "SELECT count(*) FROM failures WHERE key = ? AND at > ?", (key, time.time() - window)
        ).fetchone()
    return int(row[0])


def client_address(request: HttpRequest) -> str:
    """The client's address: the tunnel's header when one is configured and present, else
    the connection's. IPv6 by its /64."""
    raw = ""
    if settings.CLIENT_IP_HEADER:
        raw = str(request.META.get(settings.CLIENT_IP_HEADER, "")).split(",")[-1].strip()
    for candidate in (raw, str(request.META.get("REMOTE_ADDR", "")).strip()):
        try:
            address = ipaddress.ip_address(candidate)
        except ValueError:
            continue
        if isinstance(address, ipaddress.IPv6Address):
            if address.ipv4_mapped is not None:
                return str(address.ipv4_mapped)
            return str(ipaddress.ip_network(f"{address}/64", strict=False))
        return str(address)
    return "unknown"


def _guarded(request: HttpRequest) -> str | None:
    """'password' or 'code' for a POST to a view that checks a secret, else None."""
    if request.method != "POST":
        return None
    try:
        name = resolve(request.path_info).view_name
    except Resolver404:
        return None
    if name in PASSWORD_VIEWS:
        return "password"
    if name in CODE_VIEWS:
        return "code"
    return None


def _user_name(request: HttpRequest) -> str:
    return str(request.POST.get("username", "")).strip().casefold()[:150]


def _minutes(seconds: int) -> str:
    minutes = math.ceil(seconds / 60)
    return "a minute" if minutes <= 1 else f"{minutes} minutes"


def throttled_response(request: HttpRequest, wait: int) -> HttpResponse:
    response = render(
        request,
        "registration/throttled.html",
        {"wait": wait, "wait_text": _minutes(wait)},
        status=429,
    )
    response["Retry-After"] = str(wait)
    return response


class LoginThrottle:
    """Counts and limits the POSTs to the sign-in views (see the module's docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        kind = _guarded(request)
        if kind is None:
            return self.get_response(request)
        address = client_address(request)
        user = _user_name(request) if kind == "password" else ""
        keys = (f"address:{address}", *((f"user:{user}",) if user else ()))
        started = attempt_begin(keys)
        if isinstance(started, int):
            log.warning(
                "sign-in refused (429, %d s to wait) at %s for user name %r from %s",
                started,
                request.path,
                user,
                address,
            )
            return throttled_response(request, started)
        response = self.get_response(request)
        status = response.status_code
        failed = status == 404 if kind == "code" else status == 200
        signed_in = status in (301, 302, 303) and request.user.is_authenticated
        if failed:
            log.warning(
                "sign-in failed at %s for user name %r from %s (%d of %d in %d s)",
                request.path,
                user,
                address,
                failures_count(keys[-1] if user else keys[0]),
                settings.LOGIN_ATTEMPTS,
                settings.LOGIN_WINDOW_SECONDS,
            )
        elif signed_in:
            owner = request.user.get_username().strip().casefold()
            failures_clear((*keys, f"user:{owner}"))
        else:
            attempt_release(started)
        return response
