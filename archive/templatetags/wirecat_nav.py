"""The main menu: its links, which of them stay in the bar at which width, and which is current.

base.html renders the list twice, once as the bar and once inside the "More" menu; CSS shows
each link in exactly one of the two places for the window's width (wirecat.css, "Main menu"):

- tier 1 (Search, Chats, People, Tasks) is always in the bar;
- tier 2 (Dashboard, Notes, Tags, Import, Sync) is in the bar above 800 px, in "More" below;
- tier 3 (Meetings, Agents, Sends, Webhooks) is in the bar above 1080 px, in "More" below;
- tier 4 (Statistics, Files, Admin, API) is always in "More", with Sign out.
"""

from __future__ import annotations

from dataclasses import dataclass

from django import template
from django.http import HttpRequest
from django.urls import reverse

register = template.Library()


@dataclass(frozen=True)
class NavLink:
    label: str
    url: str
    tier: int
    current: bool


# (label, url name, tier, the url names of the pages that belong to it)
_LINKS: tuple[tuple[str, str, int, frozenset[str]], ...] = (
    ("Dashboard", "archive:dashboard", 2, frozenset({"archive:dashboard"})),
    ("Search", "archive:search", 1, frozenset({"archive:search", "archive:search_save"})),
    (
        "Chats",
        "archive:chats",
        1,
        frozenset({"archive:chats", "archive:chat", "archive:message", "archive:revisions"}),
    ),
    ("Meetings", "meetings:calendar", 3, frozenset({"meetings:*"})),
    (
        "People",
        "archive:people",
        1,
        frozenset(
            {
                "archive:people",
                "archive:person",
                "archive:person_create",
                "archive:person_edit",
                "archive:people_suggestions",
            }
        ),
    ),
    ("Tasks", "tasks:list", 1, frozenset({"tasks:*"})),
    ("Notes", "notes:list", 2, frozenset({"notes:*"})),
    ("Tags", "archive:tags", 2, frozenset({"archive:tags", "archive:tag_bulk", "archive:tag_all"})),
    ("Import", "archive:imports", 2, frozenset({"archive:imports", "archive:import"})),
    (
        "Sync",
        "archive:sync",
        2,
        frozenset({"archive:sync", "archive:sync_account", "archive:sync_telegram_login"}),
    ),
    ("Agents", "archive:agents", 3, frozenset({"archive:agents", "archive:agent_edit"})),
    ("Sends", "archive:sends", 3, frozenset({"archive:sends", "archive:send_decide"})),
    (
        "Webhooks",
        "archive:webhooks",
        3,
        frozenset({"archive:webhooks", "archive:webhook", "archive:webhooks_private"}),
    ),
    ("Statistics", "archive:stats", 4, frozenset({"archive:stats"})),
    (
        "Files",
        "archive:files_needs_text",
        4,
        frozenset({"archive:files_needs_text", "archive:attachment_text"}),
    ),
    ("Admin", "admin:index", 4, frozenset()),
    ("API", "api:openapi-view", 4, frozenset()),
)


@register.simple_tag(takes_context=True)
def main_menu(context: template.Context) -> list[NavLink]:
    """The menu's links for this request, the current page's marked."""
    request: HttpRequest | None = context.get("request")
    match = getattr(request, "resolver_match", None)
    here = match.view_name if match else ""
    app = f"{match.app_name}:*" if match and match.app_name else ""
    return [
        NavLink(label, reverse(name), tier, here in pages or app in pages)
        for label, name, tier, pages in _LINKS
    ]
