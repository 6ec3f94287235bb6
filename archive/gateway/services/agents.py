"""Agents: the owner's AI agents and their tokens, scopes, rate limits and read state.

A token is `wct_<key>_<secret>`: the key finds the agent, the secret is checked against a
SHA-256 hash in constant time (the token is random, 256 bits: a slow hash would add nothing
but latency). The token is shown once, when made or rotated, and never stored."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from archive.gateway.models import Agent, AgentChatRead, AgentRead
from archive.store.ids import new_public_id
from archive.store.models import Account, Chat, Message
from wirecat.errors import Conflict, Invalid, NotFound, RateLimited

SCOPES = {
    "messages.read": "read messages, chats, people, tags, search, unread and the changes feed",
    "messages.send": "send messages through the send guard",
    "tags.write": "add and remove tags",
    "people.write": "link and unlink identities",
    "attachments.read": "download attachment bytes",
    "attachments.text": "write back the text read or heard in a file (a scan, a voice note;"
    " the agent and its model are kept)",
    "tasks.read": "read projects, tasks and their history",
    "tasks.write": "create and change tasks (each change an event with the agent as actor)",
    "meetings.read": "read meetings, their participants and transcripts, and search them",
    "meetings.write": "store transcripts of meetings (the agent and its model are kept)",
    "notes.read": "read notes, their revisions, links and backlinks, and search them",
    "notes.write": "write, edit and delete notes and links (the agent is kept as author)",
    "conversations.links": "answer which earlier message each message of a chat replies to"
    " (the agent's batches; the answers are kept with the agent and its model)",
    "stats.read": "read statistics: messages over time, hour of week, top chats and people,"
    " unanswered messages and response times",
}
MARK_MAX = 1_000
_PREFIX = "wct_"


@dataclass(frozen=True)
class Issued:
    agent: Agent
    token: str  # shown to the owner once


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _issue() -> tuple[str, str, str]:
    key = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    return key, _hash(secret), f"{_PREFIX}{key}_{secret}"


def scopes_clean(scopes: Sequence[str]) -> list[str]:
    unknown = sorted({s for s in scopes if s not in SCOPES})
    if unknown:
        raise Invalid(f"scopes: unknown {', '.join(unknown)}; known: {', '.join(SCOPES)}")
    return sorted(set(scopes))


@transaction.atomic
def agent_create(*, name: str, scopes: Sequence[str], since: datetime | None = None) -> Issued:
    """A new agent. History sent before `since` (default: now) counts as read."""
    cleaned = " ".join(str(name).split())
    if not cleaned or len(cleaned) > 100:
        raise Invalid("name: 1 to 100 characters")
    if Agent.objects.filter(name=cleaned).exists():
        raise Conflict(f"an agent named {cleaned!r} already exists")
    key, digest, token = _issue()
    start = since or timezone.now()
    # Without an earlier `since`, everything stored so far is read: the watermark starts
    # at the newest message (later imports of old history are read by `since`).
    through = 0
    if since is None:
        through = Message.objects.aggregate(top=Max("id"))["top"] or 0
    agent = Agent.objects.create(
        public_id=new_public_id("agt"),
        name=cleaned,
        scopes=scopes_clean(scopes),
        key_id=key,
        token_hash=digest,
        since=start,
        read_through=through,
    )
    return Issued(agent, token)


def _agent(public_id: str) -> Agent:
    agent = Agent.objects.filter(public_id=public_id).first()
    if agent is None:
        raise NotFound(f"agent {public_id[:40]!r} does not exist")
    return agent


@transaction.atomic
def agent_rotate(*, public_id: str) -> Issued:
    """A new token for the agent; the old one stops working at once."""
    agent = _agent(public_id)
    agent.key_id, agent.token_hash, token = _issue()
    agent.revoked_at = None
    agent.save(update_fields=["key_id", "token_hash", "revoked_at"])
    return Issued(agent, token)


def agent_revoke(*, public_id: str) -> Agent:
    agent = _agent(public_id)
    if agent.revoked_at is None:
        agent.revoked_at = timezone.now()
        agent.save(update_fields=["revoked_at"])
    return agent


def agent_update(*, public_id: str, scopes: Sequence[str]) -> Agent:
    agent = _agent(public_id)
    agent.scopes = scopes_clean(scopes)
    agent.save(update_fields=["scopes"])
    return agent


def _ids(values: Sequence[int | str], what: str) -> list[int]:
    ids = []
    for value in values:
        text = str(value).strip()
        if not text.isdigit() or len(text) > 18:
            raise Invalid(f"{what}: not an id: {text[:40]!r}")
        ids.append(int(text))
    return sorted(set(ids))


@transaction.atomic
def agent_limit(
    *, public_id: str, account_ids: Sequence[int | str] = (), chat_ids: Sequence[int | str] = ()
) -> Agent:
    """Limit the agent to these accounts' chats and these chats (none of either: every
    chat). What it reads, marks read, sees in the feed and sends to stays within them."""
    agent = _agent(public_id)
    accounts, chats = _ids(account_ids, "accounts"), _ids(chat_ids, "chats")
    known = set(Account.objects.filter(pk__in=accounts).values_list("pk", flat=True))
    if missing := [i for i in accounts if i not in known]:
        raise Invalid(f"accounts: no account {missing[0]}")
    known = set(Chat.objects.filter(pk__in=chats).values_list("pk", flat=True))
    if missing := [i for i in chats if i not in known]:
        raise Invalid(f"chats: no chat {missing[0]}")
    agent.limit_accounts.set(accounts)
    agent.limit_chats.set(chats)
    return agent


def agent_authenticate(token: str) -> Agent | None:
    """The agent a token belongs to, or None (unknown, wrong or revoked)."""
    if not token.startswith(_PREFIX) or len(token) > 200:
        return None
    key, _, secret = token[len(_PREFIX) :].partition("_")
    agent = Agent.objects.filter(key_id=key, revoked_at=None).first()
    # Compare even when no agent has this key, so timing does not tell keys apart.
    expected = agent.token_hash if agent is not None else "0" * 64
    if not hmac.compare_digest(_hash(secret), expected) or agent is None:
        return None
    return agent


# A store opened read-only (see wirecat.db.base) cannot keep the counter: each process
# counts in memory then, so reading still works and is still limited.
_counted_here: dict[tuple[int, int], int] = {}
_counted_here_lock = threading.Lock()


def agent_hit(agent: Agent) -> None:
    """Count one request against the agent's per-minute limit; RateLimited beyond it."""
    now = time.time()
    minute = int(now // 60)
    connection.ensure_connection()
    if getattr(connection, "read_only", False):
        count = _count_here(agent.pk, minute)
    else:
        count = _count_in_store(agent, minute)
    if count > agent.rate_per_minute:
        wait = max(1, int(60 - now % 60) + 1)
        raise RateLimited(
            f"rate limit: {agent.rate_per_minute} requests a minute; retry in {wait} s", wait
        )


def _count_in_store(agent: Agent, minute: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO archive_agentrate (agent_id, minute, count) VALUES (%s, %s, 1)"
            " ON CONFLICT (agent_id, minute) DO UPDATE SET count = count + 1 RETURNING count",
            [agent.pk, minute],
        )
        count = int(cursor.fetchone()[0])
        if count == 1:  # once a minute: note the use, forget old windows
            cursor.execute(
                "DELETE FROM archive_agentrate WHERE agent_id = %s AND minute < %s",
                [agent.pk, minute],
            )
            Agent.objects.filter(pk=agent.pk).update(last_used_at=timezone.now())
    return count


def _count_here(agent_id: int, minute: int) -> int:
    with _counted_here_lock:
        for stale in [key for key in _counted_here if key[1] < minute]:
            del _counted_here[stale]
        count = _counted_here.get((agent_id, minute), 0) + 1
        _counted_here[(agent_id, minute)] = count
    return count


# --- read state ---------------------------------------------------------------------------


def _compact(agent: Agent) -> None:
    """Move the watermark up over the read prefix and drop the rows it now covers, so the
    unread scan starts near the first unread message however much was marked."""
    from archive.gateway.selectors import first_unread_id

    first = first_unread_id(agent)
    newest = Message.objects.aggregate(top=Max("id"))["top"] or 0
    through = newest if first is None else first - 1
    if through > agent.read_through:
        agent.read_through = through
        Agent.objects.filter(pk=agent.pk).update(read_through=through)
        AgentRead.objects.filter(agent=agent, message_id__lte=through).delete()


@transaction.atomic
def mark_read(
    *,
    agent: Agent,
    ids: Sequence[str] = (),
    up_to: str | None = None,
    chat_id: int | None = None,
) -> int:
    """Mark messages read for this agent only: by public ids (at most 1,000), everything
    up to one message, or a whole chat as it is now. Returns how many of the named were
    inbound messages newly counted (ids), or 0 for the other forms. Idempotent."""
    given = sum([bool(ids), up_to is not None, chat_id is not None])
    if given != 1:
        raise Invalid("mark_read: give exactly one of ids, up_to, chat_id")
    from archive.gateway.selectors import agent_chat_scope, agent_scope

    visible = Message.objects.filter(agent_scope(agent))  # outside its limits: not found
    marked = 0
    if ids:
        if len(ids) > MARK_MAX:
            raise Invalid(f"ids: at most {MARK_MAX:,} at once")
        found = dict(visible.filter(public_id__in=list(ids)).values_list("public_id", "id"))
        missing = [i for i in ids if i not in found]
        if missing:
            raise NotFound(f"ids: no message {missing[0][:40]!r}")
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO archive_agentread (agent_id, message_id, read_at) SELECT %s,"
                " value, %s FROM json_each(%s) WHERE value > %s ON CONFLICT DO NOTHING",
                [
                    agent.pk,
                    timezone.now(),
                    f"[{','.join(map(str, found.values()))}]",
                    agent.read_through,
                ],
            )
            marked = cursor.rowcount
    elif up_to is not None:
        target = visible.filter(public_id=up_to).values_list("id", flat=True).first()
        if target is None:
            raise NotFound(f"up_to: no message {up_to[:40]!r}")
        if target > agent.read_through:
            agent.read_through = target
            Agent.objects.filter(pk=agent.pk).update(read_through=target)
            AgentRead.objects.filter(agent=agent, message_id__lte=target).delete()
    elif chat_id is not None:
        chat = Chat.objects.filter(agent_chat_scope(agent), pk=chat_id).first()
        if chat is None:
            raise NotFound(f"chat_id: no chat {chat_id}")
        top = Message.objects.filter(chat=chat).aggregate(top=Max("id"))["top"] or 0
        AgentChatRead.objects.update_or_create(agent=agent, chat=chat, defaults={"through_id": top})
    _compact(agent)
    return max(marked, 0)


def since_clean(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise Invalid(f"since: an ISO date or time, not {text[:40]!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.get_current_timezone())
    return moment - timedelta(0)
