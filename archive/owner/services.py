"""The owner: one-time login codes and the password they let the owner set."""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import (
    CommonPasswordValidator,
    MinimumLengthValidator,
    NumericPasswordValidator,
    UserAttributeSimilarityValidator,
    get_default_password_validators,
    validate_password,
)
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from archive.owner.models import LoginCode, WorkerHeartbeat
from wirecat.db.pragmas import connection_report
from wirecat.errors import Invalid, NotFound

CODE_LIFETIME = timedelta(hours=1)
OWNER_USERNAME = "owner"


@dataclass(frozen=True)
class IssuedCode:
    code: str
    url: str
    expires_at: object


def _hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def owner_exists() -> bool:
    return get_user_model().objects.filter(is_superuser=True, is_active=True).exists()


@transaction.atomic
def login_code_issue(*, base_url: str | None = None) -> IssuedCode:
    """A new one-time code; only its hash is stored. Valid for an hour, usable once, and
    the only one: every code issued before it stops working.

    The link carries the code in its #fragment, which browsers never send: the page posts
    it in a form's body, so it is in no URL a server, proxy or tunnel logs."""
    code = secrets.token_urlsafe(24)
    now = timezone.now()
    expires = now + CODE_LIFETIME
    LoginCode.objects.filter(used_at__isnull=True, expires_at__gt=now).update(expires_at=now)
    LoginCode.objects.create(code_hash=_hash(code), expires_at=expires)
    path = reverse("login_code")
    url = f"{base_url or settings.BASE_URL}{path}#{code}"
    return IssuedCode(code=code, url=url, expires_at=expires)


def login_code_check(*, code: str) -> LoginCode:
    """The unused, unexpired code row for `code`, or NotFound (one message for every case)."""
    row = LoginCode.objects.filter(code_hash=_hash(code)).first()
    if row is None or row.used_at is not None or row.expires_at <= timezone.now():
        raise NotFound("This login link is not valid: it was used, has expired, or never existed.")
    return row


def password_rule() -> str:
    """The password rule as one sentence, from the validators that will check it
    (AUTH_PASSWORD_VALIDATORS), for the form to show before the first try."""
    first = ""
    rest: list[str] = []
    for validator in get_default_password_validators():
        if isinstance(validator, MinimumLengthValidator):
            first = f"At least {validator.min_length} characters"
        elif isinstance(validator, NumericPasswordValidator):
            rest.append("not only digits")
        elif isinstance(validator, CommonPasswordValidator):
            rest.append("not a common password")
        elif isinstance(validator, UserAttributeSimilarityValidator):
            rest.append(f"not like the user name “{OWNER_USERNAME}”")
        else:
            rest.append(str(validator.get_help_text()).rstrip("."))
    parts = [first, *rest] if first else rest
    if not parts:
        return ""
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return text[0].upper() + text[1:] + "."


@transaction.atomic
def owner_set_password(*, code: str, password: str) -> User:
    """Spend `code` and set the owner's password (creating the owner on first start)."""
    row = login_code_check(code=code)
    user_model = User
    owner = user_model.objects.filter(is_superuser=True).order_by("pk").first()
    if owner is None:
        owner = user_model(username=OWNER_USERNAME, is_staff=True, is_superuser=True)
    try:
        validate_password(password, owner)
    except ValidationError as exc:
        raise Invalid(" ".join(exc.messages)) from exc
    owner.set_password(password)
    owner.is_active = True
    owner.save()
    row.used_at = timezone.now()
    row.save(update_fields=["used_at"])
    return owner


def heartbeat_record() -> WorkerHeartbeat:
    """Record that this worker is alive, with the SQLite settings its connection runs with."""
    report = connection_report()
    with transaction.atomic():
        beat, _ = WorkerHeartbeat.objects.update_or_create(
            hostname=socket.gethostname(),
            defaults={"seen_at": timezone.now(), "pid": os.getpid(), "store": report},
        )
    return beat
