"""CalDAV, live: one calendar collection (RFC 4791) pulled with the `caldav` library.

A run asks the collection what changed since the last one: its sync-token first (RFC 6578
sync-collection: the changed and the deleted hrefs), else — a server without sync
reports, or a token it no longer knows — every href with its ETag, compared with those
the cursor holds (a collection whose CTag did not move is not listed at all). Only the
changed hrefs are fetched (calendar-multiget), `limit` at a time; the hrefs still to
fetch wait in the cursor, so a run that stops early is continued by the next one.

Each fetched object is read by the iCalendar reader (archive/connectors/ical/) and the
page hands the reads over as a `CalendarPull`, with the UIDs of the objects that were
deleted: the sync service gives them to meetings' services. The cursor keeps, per href,
its ETag and the UID it held (a deletion names only the href). The password is never
logged and never in an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

import requests
from caldav import DAVClient
from caldav.elements import dav
from caldav.elements.base import ValuedBaseElement
from caldav.lib import error as dav_error

from archive.connectors.base import FormatError
from archive.connectors.ical import read_calendar
from archive.connectors.live import (
    CalendarPull,
    Capabilities,
    Connected,
    CredentialError,
    LiveError,
    Page,
    TransientError,
)
from archive.connectors.reach import reach_error
from archive.connectors.sending import OutboundMessage, SendError
from archive.store.domain import AccountRecord, Batch
from meetings.domain import CalendarRead, EventRecord

PROVIDER = "caldav"
CALENDAR_KIND = "caldav"  # meetings' Calendar.Kind of the pulled collection
MAX_LIMIT = 200
TIMEOUT_SECONDS = 60
WHO = "The CalDAV server"
REFUSED = (
    "{who} at {where} refused the user name or password — check them (an app password,"
    " where your provider offers one)."
)


class GetCtag(ValuedBaseElement):
    """The collection's CTag (calendarserver.org): it changes whenever anything in it does."""

    tag = "{http://calendarserver.org/ns/}getctag"


def _clean_url(url: str) -> str:
    """The collection's address without user info, query or fragment, ending in "/"."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return urlunsplit((parts.scheme.lower(), netloc, path, "", ""))


def _etag(props: Mapping[str, Any]) -> str | None:
    value = props.get(dav.GetEtag.tag)
    return str(value) if value else None


class CalDav:
    kind: ClassVar[str] = "caldav"
    provider: ClassVar[str] = PROVIDER
    label: ClassVar[str] = "Calendar (CalDAV)"
    capabilities: ClassVar[Capabilities] = Capabilities(
        history=True, live=True, edits=True, deletions=True
    )
    # RFC 6578 sync reports; without them (or with this off) the ETags are compared.
    use_sync_token: ClassVar[bool] = True

    def __init__(self, credentials: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
        self._password = str(credentials.get("password") or "")
        self._username = str(settings.get("username") or "").strip()
        raw = str(settings.get("url") or "").strip()
        if not raw.startswith(("https://", "http://")) or any(c.isspace() for c in raw):
            raise LiveError("CalDAV needs the calendar's address, an http(s) URL")
        if not self._username or not self._password:
            raise CredentialError("CalDAV needs a user name and a password")
        self._url = _clean_url(raw)
        parts = urlsplit(self._url)
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._name = str(settings.get("name") or "")
        self._client: DAVClient | None = None
        self._calendar: Any = None

    # the wire -----------------------------------------------------------------------------

    def _collection(self) -> Any:
        if self._calendar is None:
            self._client = DAVClient(
                self._url,
                username=self._username,
                password=self._password,
                timeout=TIMEOUT_SECONDS,
            )
            self._calendar = self._client.calendar(url=self._url)
        return self._calendar

    def _call(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        """`call(*args)` against the server, its failures as the port's sentences."""
        where = f"{self._host}:{self._port}"
        try:
            return call(*args, **kwargs)
        except requests.Timeout as exc:
            raise reach_error(WHO, exc, host=self._host, port=self._port) from None
        except requests.ConnectionError as exc:
            raise reach_error(WHO, exc, host=self._host, port=self._port) from None
        except requests.RequestException as exc:
            raise TransientError(
                f"{WHO} at {where}: {what} failed ({type(exc).__name__})"
            ) from None
        except dav_error.AuthorizationError as exc:
            if "unauthorized" in str(exc.reason or "").lower() or "401" in str(exc.reason):
                raise CredentialError(REFUSED.format(who=WHO, where=where)) from None
            raise LiveError(
                f"{WHO} at {where} does not let {self._username} {what} ({exc.reason}) — check"
                " the calendar's address and that this user may read it."
            ) from None
        except dav_error.NotFoundError:
            raise LiveError(
                f"{WHO} at {where} has no calendar at that address — check the calendar's"
                " address (the collection's own URL, usually ending in the calendar's name/)."
            ) from None
        except dav_error.DAVError as exc:
            reason = str(exc.reason or type(exc).__name__)[:200]
            if reason[:1] == "5" or "service unavailable" in reason.lower():
                raise TransientError(f"{WHO} at {where}: {what} failed ({reason})") from None
            raise LiveError(f"{WHO} at {where}: {what} failed ({reason})") from None

    def _properties(self) -> dict[str, Any]:
        calendar = self._collection()
        found = self._call(
            "read the calendar",
            calendar.get_properties,
            [dav.DisplayName(), dav.SyncToken(), GetCtag(), dav.ResourceType()],
        )
        return dict(found or {})

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = None
        self._calendar = None

    # the port -----------------------------------------------------------------------------

    def connect(self) -> Connected:
        found = self._properties()
        kind = str(found.get(dav.ResourceType.tag) or "")
        if kind and "calendar" not in kind.lower():
            raise LiveError(
                f"{WHO} at {self._host}:{self._port} answered, but that address is not a"
                " calendar — use the calendar's own address (its URL in the calendar app)."
            )
        name = str(found.get(dav.DisplayName.tag) or "") or self._url
        self.close()
        return Connected(
            account_external_id=self._url,
            account_name=name,
            settings={"url": self._url, "username": self._username, "name": name},
        )

    def _account(self) -> AccountRecord:
        return AccountRecord(
            provider=self.provider, external_id=self._url, name=self._name or self._url
        )

    def fetch(self, cursor: Mapping[str, Any], limit: int) -> Page:
        limit = max(1, min(limit, MAX_LIMIT))
        objects: dict[str, list[str]] = {
            str(k): list(v) for k, v in dict(cursor.get("objects") or {}).items()
        }
        pending = [(str(h), str(e)) for h, e in cursor.get("pending") or []]
        state = {k: cursor[k] for k in ("token", "ctag") if cursor.get(k)}
        gone: list[str] = []
        if not pending:
            changed, deleted, state = self._changes(dict(cursor), objects)
            pending = changed
            for href in deleted:
                held = objects.pop(href, None)
                if held and held[1]:
                    gone.append(held[1])
        take, rest = pending[:limit], pending[limit:]
        read = self._read(take, objects) if take else None
        after = {**state, "objects": objects, "pending": [list(p) for p in rest]}
        pull = CalendarPull(
            kind=CALENDAR_KIND,
            key=self._url,
            name=self._name,
            read=read,
            gone=tuple(gone),
            fetched=len(take) + len(gone),
        )
        batch = Batch(account=self._account(), cursor=after, cursor_stream=self.kind)
        return Page(batch=batch, cursor=after, more=bool(rest), calendars=(pull,))

    def _changes(
        self, cursor: dict[str, Any], objects: Mapping[str, list[str]]
    ) -> tuple[list[tuple[str, str]], list[str], dict[str, Any]]:
        """(the hrefs changed or new with their ETags, the hrefs deleted, the token and
        CTag after them)."""
        props = self._properties()
        ctag = str(props.get(GetCtag.tag) or "")
        server_token = str(props.get(dav.SyncToken.tag) or "")
        if ctag and ctag == cursor.get("ctag") and server_token == cursor.get("token", ""):
            return [], [], {"token": server_token, "ctag": ctag}
        calendar = self._collection()
        token = str(cursor.get("token") or "")
        if self.use_sync_token and server_token:
            if token:
                try:
                    report = self._call(
                        "list what changed",
                        calendar.objects_by_sync_token,
                        sync_token=token,
                        load_objects=False,
                    )
                except (CredentialError, TransientError):
                    raise
                except LiveError:
                    report = None  # a token the server forgot: list everything below
                if report is not None:
                    changed: list[tuple[str, str]] = []
                    deleted: list[str] = []
                    for obj in report:
                        href = urlsplit(str(obj.url)).path
                        etag = _etag(obj.props)
                        if etag is None:
                            deleted.append(href)
                        elif objects.get(href, ["", ""])[0] != etag:
                            changed.append((href, etag))
                    return changed, deleted, {"token": str(report.sync_token), "ctag": ctag}
            report = self._call(
                "list its events", calendar.objects_by_sync_token, load_objects=False
            )
            listed = {urlsplit(str(o.url)).path: _etag(o.props) for o in report}
            after = {"token": str(report.sync_token), "ctag": ctag}
        else:
            response = self._call(
                "list its events",
                calendar.get_properties,
                [dav.GetEtag()],
                depth=1,
                parse_response_xml=False,
            )
            own = urlsplit(self._url).path
            listed = {
                urlsplit(href).path: _etag(found)
                for href, found in response.expand_simple_props([dav.GetEtag()]).items()
                if urlsplit(href).path.rstrip("/") != own.rstrip("/")
            }
            after = {"ctag": ctag}
        fresh = [(h, e or "") for h, e in listed.items() if objects.get(h, ["", ""])[0] != e]
        gone = [h for h in objects if h not in listed]
        return sorted(fresh), gone, after

    def _read(self, wanted: list[tuple[str, str]], objects: dict[str, list[str]]) -> CalendarRead:
        """The objects at the hrefs `wanted`, read; `objects` learns each one's ETag (as
        listed) and UID."""
        calendar = self._collection()
        etags = dict(wanted)
        urls = [calendar.url.join(href) for href, _ in wanted]
        found = self._call(
            "fetch events", lambda: list(calendar.multiget(urls, raise_notfound=False))
        )
        events: list[EventRecord] = []
        problems: list[str] = []
        first: CalendarRead | None = None
        for obj in found:
            href = urlsplit(str(obj.url)).path
            data = obj.data
            if not data:
                continue
            source = href.rsplit("/", 1)[-1] or href
            try:
                read = read_calendar(str(data).encode("utf-8"), source=source)
            except FormatError as exc:
                problems.append(f"{source}: {exc}; it was skipped")
                objects[href] = [etags.get(href, ""), ""]
                continue
            first = first or read
            events.extend(read.events)
            problems.extend(read.problems)
            uid = read.events[0].uid if read.events else ""
            objects[href] = [etags.get(href, ""), uid]
        return CalendarRead(
            name=self._name,
            time_zone=first.time_zone if first else "",
            events=tuple(events),
            problems=tuple(problems),
            window_start=first.window_start if first else None,
            window_end=first.window_end if first else None,
        )

    def rewind(self, cursor: Mapping[str, Any], since: datetime) -> dict[str, Any] | None:
        return None  # the sync-token (or the ETags) already says every change and deletion

    def send(self, message: OutboundMessage) -> str:
        raise SendError("a calendar cannot send messages")
