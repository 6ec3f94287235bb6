"""The Sync page: every live account with its state, runs and schedule; connect, sync
now, change the interval, pause, disconnect. Credentials go in and are never shown back."""

from __future__ import annotations

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from archive.connectors.live import token_forms
from archive.owner.selectors import worker_status
from archive.sync.jobs import account_sync as account_sync_job
from archive.sync.models import SyncAccount
from archive.sync.selectors import on_macos, sync_row, sync_rows
from archive.sync.services.accounts import (
    sync_connect,
    sync_disconnect,
    sync_get,
    sync_interval_set,
)
from archive.sync.services.login import live_login_advance, live_login_start
from wirecat.errors import Invalid, WireCatError


def _interval(raw: str) -> int:
    if not raw.strip().isdigit() or len(raw.strip()) > 7:
        raise Invalid("interval: a whole number of seconds")
    return int(raw)


DEFAULT_INTERVAL = 300
LOGIN_KIND = "telegram_user"  # the live connector the page's login connects
LOGIN_KEY = "telegram_login"  # the owner's session: the sealed login state and its step


def _on_its_way(what: str) -> str:
    """What happens to a sync just queued: a worker takes it, or it waits for one."""
    worker = worker_status()
    if worker is not None and worker.alive:
        return f"{what} is on its way."
    return f"{what} is queued; it starts once a worker runs (wirecat start)."


def _connected(request: HttpRequest, sync: SyncAccount) -> HttpResponse:
    """After a connect: the first sync queued (after commit), said, and the page again."""
    account_sync_job.delay_on_commit(sync.pk, force=True)
    flash.success(request, f"Connected {sync.account.name}; {_on_its_way('the first sync')}")
    return redirect("archive:sync")


# The connect forms the page has besides the token forms (their kind: the posted "kind").
OTHER_FORMS = ("imap", "imessage", "caldav")


def _page(
    request: HttpRequest, *, error: str = "", login_error: str = "", status: int = 200
) -> HttpResponse:
    """The page; after a failed connect, the form that was posted shows its error and keeps
    what was typed (never a secret), and every other form shows its own defaults."""
    pending = request.session.get(LOGIN_KEY) or {}
    forms = token_forms()
    posted_kind = request.POST.get("kind", "") if request.method == "POST" else ""
    response = render(
        request,
        "archive/sync.html",
        {
            "rows": sync_rows(),
            "forms": forms,
            "error": error,
            # Whose error it is: a form's own, or the page's when the kind is none of them.
            "error_kind": posted_kind if posted_kind in (*forms, *OTHER_FORMS) else "",
            "posted_kind": posted_kind,
            "login_step": pending.get("step", "start"),
            "login_error": login_error,
            "on_macos": on_macos(),
        },
        status=status,
    )
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def telegram_login_view(request: HttpRequest) -> HttpResponse:
    """The three steps of logging in to the owner's Telegram account: API id, hash and
    phone; the code Telegram sends; the two-step password when it is on."""
    post = request.POST
    if post.get("step") == "restart":
        request.session.pop(LOGIN_KEY, None)
        return redirect("archive:sync")
    pending = request.session.get(LOGIN_KEY)
    try:
        if post.get("step") == "start" or not pending:
            progress = live_login_start(kind=LOGIN_KIND, fields=post.dict())
            interval = DEFAULT_INTERVAL
        else:
            # The interval is asked with the code; a password step after it keeps it.
            interval = (
                _interval(post["interval"])
                if "interval" in post
                else int(pending.get("interval", DEFAULT_INTERVAL))
            )
            progress = live_login_advance(
                kind=LOGIN_KIND,
                sealed=pending["state"],
                fields=post.dict(),
                interval_seconds=interval,
            )
    except WireCatError as exc:
        return _page(request, login_error=str(exc), status=422)
    if progress.sync is None:
        request.session[LOGIN_KEY] = {
            "state": progress.sealed,
            "step": progress.step,
            "interval": interval,
        }
        return redirect("archive:sync")
    request.session.pop(LOGIN_KEY, None)
    return _connected(request, progress.sync)


@require_GET
def sync_page(request: HttpRequest) -> HttpResponse:
    return _page(request)


def _imap_connect(request: HttpRequest) -> dict[str, object]:
    post = request.POST
    host = post.get("host", "").strip()
    username = post.get("username", "").strip()
    if not host or len(host) > 255 or any(c in host for c in "/ @"):
        raise Invalid("server: a host name such as imap.example.org")
    if not username:
        raise Invalid("user name: needed")
    if not post.get("password"):
        raise Invalid("password: needed")
    security = post.get("security", "ssl")
    if security not in ("ssl", "starttls", "plain"):
        raise Invalid("security: ssl, starttls or plain")
    port = post.get("port", "").strip()
    if port and (not port.isdigit() or not 0 < int(port) < 65536):
        raise Invalid("port: a number from 1 to 65535")
    settings: dict[str, object] = {"host": host, "username": username, "security": security}
    if port:
        settings["port"] = int(port)
    return settings


def _caldav_connect(request: HttpRequest) -> dict[str, object]:
    post = request.POST
    url = post.get("url", "").strip()
    if (
        not url.startswith(("https://", "http://"))
        or len(url) > 500
        or any(c.isspace() for c in url)
    ):
        raise Invalid("calendar address: an http(s) URL such as https://dav.example.org/me/work/")
    if not post.get("username", "").strip():
        raise Invalid("user name: needed")
    if not post.get("password"):
        raise Invalid("password: needed")
    return {"url": url, "username": post.get("username", "").strip()[:255]}


@require_POST
def sync_connect_view(request: HttpRequest) -> HttpResponse:
    kind = request.POST.get("kind", "")
    try:
        if kind == "caldav":
            sync = sync_connect(
                kind="caldav",
                credentials={"password": request.POST.get("password", "")},
                settings=_caldav_connect(request),
                interval_seconds=_interval(request.POST.get("interval", "300")),
            )
            return _connected(request, sync)
        if kind == "imessage":
            path = request.POST.get("path", "").strip()
            if path and not (path.startswith(("/", "~")) and len(path) < 1000):
                raise Invalid(
                    "chat.db: a full path on this machine, e.g. ~/Library/Messages/chat.db"
                    if on_macos()
                    else "chat.db: a full path on this machine, e.g. ~/messages/chat.db"
                )
            sync = sync_connect(
                kind="imessage",
                credentials={},
                settings={"path": path} if path else {},
                interval_seconds=_interval(request.POST.get("interval", "300")),
            )
            return _connected(request, sync)
        if kind == "imap":
            sync = sync_connect(
                kind="imap",
                credentials={"password": request.POST.get("password", "")},
                settings=_imap_connect(request),
                interval_seconds=_interval(request.POST.get("interval", "300")),
            )
            return _connected(request, sync)
        forms = token_forms()
        if kind not in forms:
            raise Invalid(f"kind: one of {', '.join([*forms, *OTHER_FORMS])}")
        token = request.POST.get("token", "").strip()
        if not token:
            raise Invalid("token: needed")
        settings = {}
        api_url = request.POST.get("api_url", "").strip()
        if api_url:
            if not api_url.startswith(("https://", "http://")) or any(c.isspace() for c in api_url):
                raise Invalid("API address: an http(s) URL")
            settings["api_url"] = api_url
        sync = sync_connect(
            kind=kind,
            credentials={"token": token},
            settings=settings,
            interval_seconds=_interval(request.POST.get("interval", "300")),
        )
    except WireCatError as exc:
        return _page(request, error=str(exc), status=422)
    return _connected(request, sync)


@require_http_methods(["GET", "POST"])
def sync_account_view(request: HttpRequest, public_id: str) -> HttpResponse:
    """GET: the account's row (htmx polls it while a run is going). POST: an action."""
    sync = sync_get(public_id)  # NotFound: the error page
    try:
        if request.method == "GET":
            return render(request, "archive/_sync_row.html", {"row": sync_row(sync)})
        action = request.POST.get("action", "")
        if action == "now":
            account_sync_job.delay_on_commit(sync.pk, force=True)
            flash.success(request, f"{sync.account.name}: {_on_its_way('a sync')}")
        elif action == "interval":
            sync_interval_set(
                sync=sync,
                interval_seconds=_interval(request.POST.get("interval", "")),
                enabled=sync.enabled,
            )
            flash.success(request, f"{sync.account.name}: every {sync.interval_seconds} s.")
        elif action in ("pause", "resume"):
            sync_interval_set(
                sync=sync, interval_seconds=sync.interval_seconds, enabled=action == "resume"
            )
            flash.success(request, f"{sync.account.name}: {action}d.")
        elif action == "disconnect":
            name = sync.account.name
            sync_disconnect(sync=sync)
            flash.success(request, f"Disconnected {name}; its messages stay in the archive.")
        else:
            raise Invalid("action: now, interval, pause, resume or disconnect")
    except WireCatError as exc:
        flash.error(request, str(exc))
    return redirect("archive:sync")
