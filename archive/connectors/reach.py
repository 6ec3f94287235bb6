"""Why a provider could not be reached, in one sentence the owner can act on.

Every live connector meets the same few failures on the way to its provider: no network, a
name that does not resolve, no answer in time, a refused connection, a failed TLS
handshake, a connection cut without an answer. httpx (the bots), sockets (IMAP) and
Telethon (a Telegram account) raise them differently; `reach_error` reads the exception
and what it wraps (httpx wraps httpcore's, which wraps the socket's) once for all of them
and returns the port's `TransientError` with a sentence saying what happened and what to
check. The answers a provider did give (a refused token, "wait", a server error, a body
that is not what its API answers) are worded where they are read (`connectors/http.py`),
with the helpers at the end of this module.

No sentence holds a URL's path or a secret: only the provider's name and the address as
host and port.
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator

import httpx

from archive.connectors.live import TransientError

# What each failure is, and what the owner can check. `{who}` is the provider ("Telegram"),
# `{where}` the address ("api.telegram.org:443").
NO_NETWORK = "no-network"
DNS = "dns"
TIMEOUT = "timeout"
REFUSED = "refused"
TLS = "tls"
CUT = "cut"
OTHER = "other"

# kind -> (what happened, what to check). `{who}` is the provider ("Telegram"), `{host}` and
# `{where}` its address ("api.telegram.org", "api.telegram.org:443").
_SENTENCES = {
    NO_NETWORK: (
        "{who} could not be reached: this machine seems to have no network connection",
        "check its internet connection, then try again",
    ),
    DNS: (
        "{who} could not be reached: the name {host} was not found (DNS)",
        "check the address for a typing slip, and this machine's internet connection",
    ),
    TIMEOUT: (
        "{who} did not answer in time ({where})",
        "check this machine's internet connection, or try again in a few minutes",
    ),
    REFUSED: (
        "{who} could not be reached: {where} refused the connection",
        "check the address and port, and that the server there is running",
    ),
    TLS: (
        "{who} could not be reached securely: the TLS handshake with {where} failed{detail}",
        "check the address (https:// only for a TLS server), and this machine's clock and"
        " certificates",
    ),
    CUT: (
        "{who} could not be reached: {where} closed the connection without a proper answer",
        "check the address (a proxy or firewall may be in the way), or try again later",
    ),
    OTHER: (
        "{who} could not be reached at {where} ({detail})",
        "check the address and this machine's internet connection",
    ),
}
# What to check when the owner sets no address (Telegram's own servers, for an account).
_FIXED_ADDRESS_CHECK = (
    "check this machine's internet connection; a firewall or proxy may be blocking {who}"
)

_NO_NETWORK_ERRNOS = {errno.ENETUNREACH, errno.ENETDOWN, errno.EHOSTUNREACH, errno.EHOSTDOWN}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and what it wraps, outermost first (each once)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def reach_kind(exc: BaseException) -> tuple[str, str]:
    """(what kind of failure `exc` is, a short detail fit to show)."""
    for found in _chain(exc):
        if isinstance(found, socket.gaierror):
            if found.errno == getattr(socket, "EAI_AGAIN", None):
                return NO_NETWORK, ""  # the resolver itself could not be asked
            return DNS, ""
        if isinstance(found, ssl.SSLError):
            reason = getattr(found, "verify_message", "") or getattr(found, "reason", "") or ""
            return TLS, str(reason).replace("_", " ").lower()
        if isinstance(found, (httpx.TimeoutException, TimeoutError, socket.timeout)):
            return TIMEOUT, ""
        if isinstance(found, ConnectionRefusedError):
            return REFUSED, ""
        if isinstance(found, OSError) and found.errno in _NO_NETWORK_ERRNOS:
            return NO_NETWORK, ""
        if isinstance(
            found,
            (EOFError, ConnectionResetError, ConnectionAbortedError, httpx.RemoteProtocolError),
        ):
            return CUT, ""
    return OTHER, type(exc).__name__


def reach_sentence(
    who: str, exc: BaseException, *, host: str, port: int | None = None, fixed: bool = False
) -> str:
    """The sentence for `exc`, met reaching provider `who` at `host` (and `port`). `fixed`:
    the owner set no address (the provider's own servers), so the address is not checked."""
    kind, detail = reach_kind(exc)
    where = f"{host}:{port}" if port else host
    if kind == TLS:
        detail = f" ({detail})" if detail else ""
    happened, check = _SENTENCES[kind]
    if fixed and kind != NO_NETWORK:
        check = _FIXED_ADDRESS_CHECK
    return f"{happened} — {check}.".format(who=who, host=host, where=where, detail=detail)


def reach_error(
    who: str, exc: BaseException, *, host: str, port: int | None = None, fixed: bool = False
) -> TransientError:
    """The port's TransientError for `exc`, met reaching `who` at `host`: raise it `from
    None` (the original's text can hold a URL, and a URL can hold a token)."""
    return TransientError(reach_sentence(who, exc, host=host, port=port, fixed=fixed))


# What a provider answered, when it is not what its API answers ------------------------------


def refused_token(who: str, detail: str, *, check: str) -> str:
    """The provider refused the token (HTTP 401 and the like)."""
    said = f" ({detail})" if detail else ""
    return f"{who} refused the bot token{said} — {check}."


def rate_limited(who: str, detail: str, retry_after: float) -> str:
    said = f" ({detail})" if detail else ""
    return f"{who} is limiting requests{said} — wait {retry_after:.0f} s, then try again."


def server_error(who: str, status: int, detail: str = "") -> str:
    said = f": {detail}" if detail else ""
    return (
        f"{who} answered with a server error (HTTP {status}{said}) — try again in a few"
        " minutes; if it stays, check the API address."
    )


def unexpected_answer(who: str, what: str, *, status: int | None = None) -> str:
    """The answer is not what the provider's API answers (not JSON, a field missing)."""
    said = f" (HTTP {status})" if status else ""
    return (
        f"{who} answered {what} with something its API does not answer{said} — check the"
        " API address: it must be the provider's API, or a server speaking it."
    )
