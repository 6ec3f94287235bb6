"""The owner's pages for agents (tokens, scopes, sending rights), sends waiting for approval
and the send lock, and webhooks."""

from __future__ import annotations

from django.contrib import messages as flash
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from archive.gateway.models import WEBHOOK_EVENTS, Agent, SendAttempt, WebhookEndpoint
from archive.gateway.selectors import sends_awaiting, sends_queued_count
from archive.gateway.services.agents import (
    SCOPES,
    Issued,
    agent_create,
    agent_limit,
    agent_revoke,
    agent_rotate,
    agent_update,
    since_clean,
)
from archive.gateway.services.handover import handover_open, handover_seal
from archive.gateway.services.sends import gateway_settings, send_approve, send_reject
from archive.gateway.services.webhooks import (
    delivery_replay,
    endpoint_create,
    endpoint_delete,
    endpoint_get,
    endpoint_set_active,
)
from archive.store.models import Account, Chat
from archive.web.pages import HtmxHttpRequest
from wirecat.errors import Conflict, Invalid

# --- agents -------------------------------------------------------------------------------


ISSUED_KEY = "agent_issued"  # the owner's session: a new token, until the next page shows it


def _agents_page(
    request: HttpRequest, issued: Issued | None = None, status: int = 200
) -> HttpResponse:
    response = render(
        request,
        "archive/agents.html",
        {
            "agents": Agent.objects.prefetch_related("limit_accounts", "limit_chats"),
            "accounts": Account.objects.order_by("name", "id"),
            "chats": Chat.objects.select_related("account").order_by("title", "id"),
            "scopes": SCOPES.items(),
            "issued": issued,
            "error": getattr(request, "_agent_error", ""),
            # The new-agent form: as sent when it comes back with an error, else empty.
            "ticked": (
                request.POST.getlist("scopes") if request.method == "POST" else ["messages.read"]
            ),
        },
        status=status,
    )
    if issued is not None:  # the token is in this answer only: never cache it
        response["Cache-Control"] = "no-store"
    return response


def _issued_redirect(request: HttpRequest, issued: Issued) -> HttpResponse:
    """POST/redirect/GET: the new token goes to the next page through the session
    (sealed, taken out there), so a reload shows the page, not a second agent."""
    request.session[ISSUED_KEY] = handover_seal(
        {"agent": issued.agent.public_id, "token": issued.token}
    )
    return redirect("archive:agents")


def _issued_taken(request: HttpRequest) -> Issued | None:
    """The token a form just made, once: it leaves the session as it is shown."""
    opened = handover_open(request.session.pop(ISSUED_KEY, None))
    if opened is None:
        return None
    agent = Agent.objects.filter(public_id=opened.get("agent", "")).first()
    return Issued(agent, opened.get("token", "")) if agent is not None else None


@require_http_methods(["GET", "POST"])
def agents(request: HttpRequest) -> HttpResponse:
    """The owner's agents; making one shows its token once, on the page the form's
    redirect leads to."""
    if request.method == "POST":
        try:
            issued = agent_create(
                name=request.POST.get("name", ""),
                scopes=request.POST.getlist("scopes"),
                since=since_clean(request.POST.get("since")),
            )
        except (Invalid, Conflict) as exc:
            request._agent_error = str(exc)  # type: ignore[attr-defined]
            return _agents_page(request, status=422)
        return _issued_redirect(request, issued)
    return _agents_page(request, _issued_taken(request))


@require_POST
def agent_edit_view(request: HttpRequest, public_id: str) -> HttpResponse:
    """Rotate (a new token, shown once), revoke, change scopes, or limit to accounts and
    chats."""
    action = request.POST.get("action", "")
    try:
        if action == "rotate":
            return _issued_redirect(request, agent_rotate(public_id=public_id))
        if action == "revoke":
            agent = agent_revoke(public_id=public_id)
            flash.success(request, f"Revoked “{agent.name}”: its token no longer works.")
        elif action == "scopes":
            agent = agent_update(public_id=public_id, scopes=request.POST.getlist("scopes"))
            flash.success(request, f"Scopes of “{agent.name}” saved.")
        elif action == "limits":
            agent = agent_limit(
                public_id=public_id,
                account_ids=request.POST.getlist("accounts"),
                chat_ids=request.POST.getlist("chats"),
            )
            flash.success(request, f"Limits of “{agent.name}” saved.")
        else:
            raise Invalid("action: rotate, revoke, scopes or limits")
    except Invalid as exc:
        flash.error(request, str(exc))
    return redirect("archive:agents")


# --- sends --------------------------------------------------------------------------------


def _sends_context(*, notice: str = "", notice_error: bool = False) -> dict[str, object]:
    return {
        "awaiting": sends_awaiting(),
        "queued": sends_queued_count(),
        "journal": SendAttempt.objects.select_related("agent", "account", "chat")[:50],
        "settings": gateway_settings(),
        "notice": notice,
        "notice_error": notice_error,
    }


@require_GET
def sends_page(request: HttpRequest) -> HttpResponse:
    """Sends awaiting the owner (with their text, who they reach and the chat's last
    messages), the read-only lock, the journal."""
    return render(request, "archive/sends.html", _sends_context())


@require_POST
def send_decide_view(request: HtmxHttpRequest, send_id: str) -> HttpResponse:
    """Approve or refuse a waiting send. htmx gets the waiting list and the journal again,
    as they now stand (a send decided elsewhere leaves too), with what happened; without
    JavaScript, the page again."""
    decision = request.POST.get("decision", "")
    try:
        if decision == "approve":
            attempt = send_approve(send_id=send_id)
            done = f"Approved: {attempt.public_id} is on its way."
        elif decision == "refuse":
            attempt = send_reject(send_id=send_id)
            done = f"Refused: {attempt.public_id} will not be sent."
        else:
            raise Invalid("decision: approve or refuse")
    except (Conflict, Invalid) as exc:
        if request.htmx:
            context = _sends_context(notice=str(exc), notice_error=True)
            return render(request, "archive/sends.html#live", context, status=422)
        flash.error(request, str(exc))
        return redirect("archive:sends")
    if request.htmx:
        return render(request, "archive/sends.html#live", _sends_context(notice=done))
    flash.success(request, done)
    return redirect("archive:sends")


@require_POST
def gateway_lock_view(request: HttpRequest) -> HttpResponse:
    settings_row = gateway_settings()
    settings_row.read_only = request.POST.get("read_only") == "1"
    settings_row.save(update_fields=["read_only"])
    state = "on: every send is refused" if settings_row.read_only else "off"
    flash.success(request, f"Read-only lock {state}.")
    return redirect("archive:sends")


# --- webhooks -----------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def webhooks(request: HttpRequest) -> HttpResponse:
    """Endpoints and their recent deliveries; a new endpoint's secret is shown once."""
    made: WebhookEndpoint | None = None
    error = ""
    if request.method == "POST":
        try:
            made = endpoint_create(
                url=request.POST.get("url", ""),
                events=request.POST.getlist("events"),
                secret=request.POST.get("secret", ""),
            )
        except Invalid as exc:
            error = str(exc)
    response = render(
        request,
        "archive/webhooks.html",
        {
            "endpoints": WebhookEndpoint.objects.all(),
            "events": WEBHOOK_EVENTS,
            "made": made,
            "error": error,
            # After an error the form comes back as it was sent: the events ticked stay
            # ticked (none ticked means every event, so losing them widened the endpoint).
            "ticked": request.POST.getlist("events") if error else [],
            "settings": gateway_settings(),
        },
        status=422 if error else 200,
    )
    if made is not None:
        response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
def webhook_detail(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    try:
        endpoint = endpoint_get(endpoint_id=endpoint_id)
        if request.method == "POST":
            action = request.POST.get("action", "")
            if action == "replay":
                raw = request.POST.get("delivery", "")
                if not raw.isdigit() or len(raw) > 18:
                    raise Invalid("delivery: not an id")
                delivery_replay(endpoint_id=endpoint_id, delivery_id=int(raw))
                flash.success(request, f"Delivery {raw} will be sent again.")
            elif action in ("pause", "resume"):
                endpoint_set_active(endpoint_id=endpoint_id, active=action == "resume")
                flash.success(request, f"Endpoint {'resumed' if action == 'resume' else 'paused'}.")
            elif action == "delete":
                endpoint_delete(endpoint_id=endpoint_id)
                flash.success(request, "Endpoint deleted with its deliveries.")
                return redirect("archive:webhooks")
            else:
                raise Invalid("action: replay, pause, resume or delete")
            return redirect("archive:webhook", endpoint_id=endpoint_id)
    except Invalid as exc:
        flash.error(request, str(exc))
        return redirect("archive:webhook", endpoint_id=endpoint_id)
    deliveries = Paginator(endpoint.deliveries.all(), 50).get_page(request.GET.get("page"))
    return render(request, "archive/webhook.html", {"endpoint": endpoint, "deliveries": deliveries})


@require_POST
def webhooks_private_view(request: HttpRequest) -> HttpResponse:
    row = gateway_settings()
    row.webhooks_allow_private = request.POST.get("allow") == "1"
    row.save(update_fields=["webhooks_allow_private"])
    flash.success(
        request,
        "Private addresses allowed."
        if row.webhooks_allow_private
        else "Private addresses refused.",
    )
    return redirect("archive:webhooks")
