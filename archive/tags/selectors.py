"""Reads of tags: the tags page's counts, the tags on a page's targets, autocomplete, and
why a search hit matched `tag:`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Q
from django.db.models.functions import Lower

from archive.store.models import Identity, Message
from archive.tags.models import Tag, TagBulk, Tagging, TagTargetKind


@dataclass(frozen=True)
class TagCounts:
    tag: Tag
    chats: int
    people: int
    messages: int
    notes: int = 0

    @property
    def total(self) -> int:
        return self.chats + self.people + self.messages + self.notes


def tag_list() -> list[TagCounts]:
    """Every tag with how many chats, people, messages and notes carry it, by name."""
    rows = Tag.objects.annotate(
        chats=Count("taggings", filter=Q(taggings__target_kind=TagTargetKind.CHAT)),
        people=Count("taggings", filter=Q(taggings__target_kind=TagTargetKind.PERSON)),
        messages=Count("taggings", filter=Q(taggings__target_kind=TagTargetKind.MESSAGE)),
        notes=Count("taggings", filter=Q(taggings__target_kind=TagTargetKind.NOTE)),
    ).order_by(Lower("name"))
    return [TagCounts(tag, tag.chats, tag.people, tag.messages, tag.notes) for tag in rows]


def tag_names(*, prefix: str = "", limit: int = 20) -> list[str]:
    """Tag names starting with `prefix` (any case), for autocomplete."""
    qs = Tag.objects.all()
    if prefix.strip():
        qs = qs.filter(name__istartswith=prefix.strip())
    return list(qs.order_by(Lower("name")).values_list("name", flat=True)[:limit])


def tags_of(kind: str, ids: Iterable[int]) -> dict[int, list[Tag]]:
    """The tags on each of `ids` (targets of one kind), in one query."""
    found: dict[int, list[Tag]] = defaultdict(list)
    keys = list(ids)
    if not keys:
        return found
    for tagging in (
        Tagging.objects.filter(target_kind=kind, target_id__in=keys)
        .select_related("tag")
        .order_by(Lower("tag__name"))
    ):
        found[tagging.target_id].append(tagging.tag)
    return found


def tagged_via(names: Iterable[str], messages: list[Message]) -> dict[int, list[str]]:
    """For each message, why it carries each of the tags `names`: "message", "chat" or
    "person" (its sender's), e.g. {12: ["urgent (chat)"]}. Three queries at most."""
    wanted = {name.lower() for name in names}
    out: dict[int, list[str]] = defaultdict(list)
    if not wanted or not messages:
        return out
    tags = {t.pk: t for t in Tag.objects.annotate(f=Lower("name")).filter(f__in=wanted)}
    if not tags:
        return out
    people = dict(
        Identity.objects.filter(pk__in={m.sender_id for m in messages if m.sender_id})
        .exclude(person=None)
        .values_list("pk", "person_id")
    )
    keys = {
        "message": {m.pk for m in messages},
        "chat": {m.chat_id for m in messages},
        "person": set(people.values()),
    }
    carried: set[tuple[int, str, int]] = set()
    query = Q()
    for kind, ids in keys.items():
        if ids:
            query |= Q(target_kind=kind, target_id__in=ids)
    for tag_id, kind, target in Tagging.objects.filter(query, tag_id__in=tags).values_list(
        "tag_id", "target_kind", "target_id"
    ):
        carried.add((tag_id, kind, target))
    for message in messages:
        targets: dict[str, int | None] = {
            "message": message.pk,
            "chat": message.chat_id,
            "person": people.get(message.sender_id or 0),
        }
        for tag_id, tag in tags.items():
            for place, key in targets.items():
                if key is not None and (tag_id, place, key) in carried:
                    out[message.pk].append(f"{tag.name} ({place})")
    return out


def tag_bulk_get(*, bulk_id: int) -> TagBulk | None:
    return TagBulk.objects.select_related("tag").filter(pk=bulk_id).first()
