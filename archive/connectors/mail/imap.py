"""Mail, live: IMAP4rev1 (RFC 3501) with Python's imaplib, over TLS by default.

Each folder is read in UID order; the cursor keeps, per folder, its UIDVALIDITY and the last
UID recorded. A folder whose UIDVALIDITY changed (recreated, or its server's UIDs reset) is
read again from its first message: messages are keyed by their Message-ID and thread, so
nothing is stored twice. Folders are opened read-only (`EXAMINE`) and bodies fetched with
`BODY.PEEK[]`: syncing never marks mail as read. Each message is translated exactly as an
import translates an mbox message (archive/connectors/mail.py: threads, charsets,
attachments). The password is never logged and never in an error.
"""

from __future__ import annotations

import contextlib
import imaplib
import re
import ssl
from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar

from archive.connectors.base import ImportItem
from archive.connectors.live import (
    Capabilities,
    Connected,
    CredentialError,
    LiveError,
    Page,
    TransientError,
)
from archive.connectors.mail.export import PROVIDER, mail_item
from archive.connectors.reach import reach_error
from archive.connectors.sending import OutboundMessage, SendError
from archive.store.domain import AccountRecord, Batch, IdentityRecord

MAX_LIMIT = 500
TIMEOUT_SECONDS = 60
SECURITY = ("ssl", "starttls", "plain")
WHO = "The mail server"  # how the sentences name the provider
_LIST_LINE = re.compile(rb'\((?P<flags>[^)]*)\) (?:"[^"]*"|NIL) (?P<name>.+)$')
_NOT_SELECTABLE = (b"\\noselect", b"\\nonexistent")


def _quoted(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unquoted(name: bytes) -> str:
    text = name.decode("utf-8", "replace").strip()
    if text.startswith('"') and text.endswith('"'):
        text = text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return text


class Imap:
    kind: ClassVar[str] = "imap"
    provider: ClassVar[str] = PROVIDER
    label: ClassVar[str] = "Mail (IMAP)"
    capabilities: ClassVar[Capabilities] = Capabilities(history=True, live=True)

    def __init__(self, credentials: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
        self._password = str(credentials.get("password") or "")
        self._host = str(settings.get("host") or "").strip()
        self._username = str(settings.get("username") or "").strip()
        if not self._host or not self._username or not self._password:
            raise CredentialError("IMAP needs a server, a user name and a password")
        self._security = str(settings.get("security") or "ssl")
        if self._security not in SECURITY:
            raise LiveError(f"IMAP security: one of {', '.join(SECURITY)}")
        default_port = 993 if self._security == "ssl" else 143
        self._port = int(settings.get("port") or default_port)
        self._folders = [str(f) for f in settings.get("folders") or []]
        self._owner = str(settings.get("address") or self._username)
        self._imap: imaplib.IMAP4 | None = None
        self._listed: list[str] | None = None
        self._drained: set[str] = set()

    # the wire -----------------------------------------------------------------------------

    def _session(self) -> imaplib.IMAP4:
        if self._imap is not None:
            return self._imap
        where = f"IMAP {self._host}:{self._port}"
        try:
            if self._security == "ssl":
                imap: imaplib.IMAP4 = imaplib.IMAP4_SSL(
                    self._host, self._port, ssl_context=ssl.create_default_context(),
                    timeout=TIMEOUT_SECONDS,
                )  # fmt: skip
            else:
                imap = imaplib.IMAP4(self._host, self._port, timeout=TIMEOUT_SECONDS)
                if self._security == "starttls":
                    imap.starttls(ssl.create_default_context())
        except OSError as exc:
            raise reach_error(WHO, exc, host=self._host, port=self._port) from None
        except imaplib.IMAP4.error as exc:  # it answered, but not as an IMAP server does
            raise LiveError(
                f"{WHO} at {self._host}:{self._port} did not answer as an IMAP server does"
                f" ({exc}) — check the server, port and security under Advanced."
            ) from None
        try:
            imap.login(self._username, self._password)
        except imaplib.IMAP4.abort as exc:
            raise TransientError(
                f"{WHO} at {self._host}:{self._port} hung up while logging in — try again"
                " in a few minutes."
            ) from exc
        except OSError as exc:
            raise reach_error(WHO, exc, host=self._host, port=self._port) from None
        except imaplib.IMAP4.error as exc:
            detail = str(exc).replace(self._password, "…") if self._password else str(exc)
            raise CredentialError(
                f"{where} refused the login of {self._username}: {detail} — check the user"
                " name and password (an app password, where your provider offers one)."
            ) from None
        self._imap = imap
        return imap

    def _command(self, what: str, call: Any, *args: Any) -> list[Any]:
        try:
            status, data = call(*args)
        except imaplib.IMAP4.abort as exc:
            self._imap = None
            raise TransientError(f"IMAP {what}: the connection broke ({exc})") from None
        except OSError as exc:
            self._imap = None
            raise reach_error(WHO, exc, host=self._host, port=self._port) from None
        except imaplib.IMAP4.error as exc:
            raise LiveError(f"IMAP {what}: {exc}") from None
        if status != "OK":
            raise LiveError(f"IMAP {what}: {status} {data!r}"[:300])
        return list(data)

    def close(self) -> None:
        if self._imap is not None:
            with contextlib.suppress(OSError, imaplib.IMAP4.error):
                self._imap.logout()
            self._imap = None

    # the port -----------------------------------------------------------------------------

    def connect(self) -> Connected:
        self._session()
        self._folder_list()
        self.close()
        return Connected(
            account_external_id=self._username.lower(),
            account_name=self._username,
            settings={},
        )

    def _folder_list(self) -> list[str]:
        if self._listed is None:
            if self._folders:
                self._listed = list(self._folders)
            else:
                imap = self._session()
                names = []
                for line in self._command("LIST", imap.list):
                    match = _LIST_LINE.match(line) if isinstance(line, bytes) else None
                    if match is None:
                        continue
                    if any(flag in match["flags"].lower() for flag in _NOT_SELECTABLE):
                        continue
                    names.append(_unquoted(match["name"]))
                # INBOX first, then the rest in a stable order.
                self._listed = sorted(names, key=lambda n: (n.upper() != "INBOX", n))
        return self._listed

    def _account(self) -> AccountRecord:
        owner = self._owner.lower()
        return AccountRecord(
            provider=self.provider,
            external_id=self._username.lower(),
            name=self._username,
            owner=IdentityRecord(external_id=owner, email=self._owner) if "@" in owner else None,
        )

    def fetch(self, cursor: Mapping[str, Any], limit: int) -> Page:
        folders: dict[str, dict[str, int]] = {
            name: dict(value) for name, value in dict(cursor.get("folders") or {}).items()
        }
        limit = max(1, min(limit, MAX_LIMIT))
        imap = self._session()
        for folder in self._folder_list():
            if folder in self._drained:
                continue
            self._command(f"EXAMINE {folder}", imap.select, _quoted(folder), True)
            validity_data = imap.response("UIDVALIDITY")[1]
            validity = int(validity_data[0]) if validity_data and validity_data[0] else 0
            state = folders.get(folder, {})
            last = int(state.get("uid", 0)) if state.get("uidvalidity") == validity else 0
            found = self._command(
                f"UID SEARCH in {folder}", imap.uid, "SEARCH", "UID", f"{last + 1}:*"
            )
            uids = sorted(int(u) for u in (found[0] or b"").split() if int(u) > last)
            if len(uids) <= limit:
                self._drained.add(folder)
            take = uids[:limit]
            if not take:
                folders[folder] = {"uidvalidity": validity, "uid": last}
                continue
            records = self._messages(imap, folder, take)
            folders[folder] = {"uidvalidity": validity, "uid": take[-1]}
            batch = Batch.from_items(
                self._account(), records, cursor={"folders": folders}, cursor_stream=self.kind
            )
            more = any(f not in self._drained for f in self._folder_list())
            return Page(batch=batch, cursor={"folders": folders}, more=more)
        return Page(batch=None, cursor={"folders": folders}, more=False)

    def _messages(self, imap: imaplib.IMAP4, folder: str, uids: list[int]) -> list[ImportItem]:
        wanted = ",".join(str(u) for u in uids)
        data = self._command(
            f"UID FETCH in {folder}", imap.uid, "FETCH", wanted, "(UID BODY.PEEK[])"
        )
        items = []
        for part in data:
            if not isinstance(part, tuple) or len(part) < 2:
                continue
            head, body = part[0], part[1]
            match = re.search(rb"UID (\d+)", head)
            number = int(match.group(1)) if match else 0
            item = mail_item(
                bytes(body),
                source=f"imap://{self._host}/{folder}",
                number=number,
                owner=self._owner,
            )
            if not isinstance(item, str):  # a str is why it was skipped
                items.append(item)
        return items

    def rewind(self, cursor: Mapping[str, Any], since: datetime) -> dict[str, Any] | None:
        return None  # UIDs carry no time; new mail is never missed, and mail is not edited

    def send(self, message: OutboundMessage) -> str:
        raise SendError("sending mail through SMTP is not built yet")
