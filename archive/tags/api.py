"""The API for tags: list, tags on a target, add, remove, rename, merge, delete."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from archive.store.models import Chat
from archive.tags.models import TagTargetKind
from archive.tags.schemas import (
    RemovedOut,
    TagCountsOut,
    TagMergeIn,
    TagNameIn,
    TagOut,
    TagRenameIn,
    TagTargetIn,
    TargetKey,
    TargetKind,
    tag_out,
)
from archive.tags.selectors import tag_list, tags_of
from archive.tags.services import (
    TagTarget,
    tag_add,
    tag_delete,
    tag_merge,
    tag_remove,
    tag_rename,
    tag_target,
)
from archive.web.api import answers, caller_actor, caller_sees, requires, scope
from wirecat.errors import Conflict, Invalid, NotFound

router = Router(tags=["archive"])


def _target(request: HttpRequest, kind: str, key: str) -> TagTarget:
    """The target; anything but a message named by a msg_… key, or anything but a note
    named by a note_… key, does not exist (404), nor does a chat or message outside the
    calling agent's limits."""
    prefixes = {TagTargetKind.MESSAGE: "msg_", TagTargetKind.NOTE: "note_"}
    if any(key.startswith(p) for k, p in prefixes.items() if k != kind):
        raise NotFound(f"{kind} {key[:40]!r} does not exist")
    target = tag_target(kind=kind, key=key)
    chat = None
    if target.kind == TagTargetKind.CHAT:
        chat = Chat.objects.filter(pk=target.pk).first()
    elif target.kind == TagTargetKind.MESSAGE:
        chat = Chat.objects.filter(messages__pk=target.pk).first()
    if chat is not None and not caller_sees(request, chat):
        raise NotFound(f"{kind} {key[:40]!r} does not exist")
    return target


# --- tags ---------------------------------------------------------------------------------


@router.get(
    "/tags",
    response=answers(list[TagCountsOut]),
    summary="Every tag with its counts per kind",
    **scope("messages.read"),
)
@requires("messages.read")
def tags_list(request: HttpRequest) -> list[TagCountsOut]:
    return [
        TagCountsOut(
            name=row.tag.name,
            colour=row.tag.colour,
            chats=row.chats,
            people=row.people,
            messages=row.messages,
            notes=row.notes,
        )
        for row in tag_list()
    ]


@router.get(
    "/tags/of",
    response=answers(list[TagOut]),
    summary="The tags on one chat, person, message or note",
    **scope("messages.read"),
)
@requires("messages.read")
def tags_on(request: HttpRequest, kind: TargetKind, key: TargetKey) -> list[TagOut]:
    target = _target(request, kind, key)
    return [tag_out(tag) for tag in tags_of(target.kind, [target.pk]).get(target.pk, [])]


@router.post(
    "/tags/add",
    response=answers(TagOut),
    summary="Tag a chat, person, message or note (idempotent)",
    **scope("tags.write"),
)
@requires("tags.write")
def tags_add(request: HttpRequest, body: TagTargetIn) -> TagOut:
    target = _target(request, body.kind, body.key)
    return tag_out(tag_add(target=target, name=body.name, actor=caller_actor(request)))


@router.post(
    "/tags/remove",
    response=answers(RemovedOut),
    summary="Untag a target (idempotent)",
    **scope("tags.write"),
)
@requires("tags.write")
def tags_remove(request: HttpRequest, body: TagTargetIn) -> RemovedOut:
    target = _target(request, body.kind, body.key)
    return RemovedOut(removed=int(tag_remove(target=target, name=body.name)))


@router.post(
    "/tags/rename",
    response=answers(TagOut),
    summary="Rename a tag (409 if the name is taken)",
    **scope("tags.write"),
)
@requires("tags.write")
def tags_rename(request: HttpRequest, body: TagRenameIn) -> TagOut:
    return tag_out(tag_rename(name=body.name, new_name=body.new_name))


@router.post(
    "/tags/merge",
    response=answers(TagOut),
    summary="Merge a tag into another",
    **scope("tags.write"),
)
@requires("tags.write")
def tags_merge(request: HttpRequest, body: TagMergeIn) -> TagOut:
    """409 when `into` names the same tag (they differ only in case or spacing)."""
    try:
        return tag_out(tag_merge(name=body.name, into=body.into))
    except Invalid as exc:  # "a tag cannot be merged into itself": the names are well formed
        raise Conflict(str(exc)) from exc


@router.post(
    "/tags/delete",
    response=answers(RemovedOut),
    summary="Delete a tag and its taggings",
    **scope("tags.write"),
)
@requires("tags.write")
def tags_delete(request: HttpRequest, body: TagNameIn) -> RemovedOut:
    return RemovedOut(removed=tag_delete(name=body.name))
