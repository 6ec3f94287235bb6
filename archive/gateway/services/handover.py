"""A token shown once, carried across the redirect after the form that made it.

The Agents page answers a form that makes (or rotates) a token with a redirect
(POST/redirect/GET: reloading the page makes no second agent), so the new token has to
reach the page the browser is sent to. It rides in the owner's session for that one
request: encrypted and authenticated (Fernet, under a key derived from SECRET_KEY, so
the session table alone does not open it), good for a few minutes, and taken out by the
first page that shows it. The store keeps only the token's hash, as before.
"""

from __future__ import annotations

import base64
import hashlib
import json

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

HANDOVER_SECONDS = 300


def _fernet() -> Fernet:
    material = b"wirecat handover of a token shown once\0" + settings.SECRET_KEY.encode()
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(material).digest()))


def handover_seal(values: dict[str, str]) -> str:
    """`values` as one opaque string, for the session until the next page."""
    return _fernet().encrypt(json.dumps(values).encode()).decode()


def handover_open(sealed: object) -> dict[str, str] | None:
    """What `handover_seal` sealed; None when it is missing, altered or too old."""
    if not isinstance(sealed, str) or not sealed:
        return None
    try:
        opened = json.loads(_fernet().decrypt(sealed.encode(), ttl=HANDOVER_SECONDS))
    except (InvalidToken, ValueError):
        return None
    if not isinstance(opened, dict):
        return None
    return {str(k): str(v) for k, v in opened.items()}
