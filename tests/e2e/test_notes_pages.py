"""The notes pages in a real browser: hostile notes never run (the note page and the live
preview); writing a note from a message with `[[` suggestions and finding it among the
person's backlinks; two tabs editing one note (the second save gets the conflict with both
texts); the editor without JavaScript; and screenshots of the list, a note, the editor with
its suggestions open and the conflict at 1280 and 390 px, light and dark, nothing wider
than the window. Screenshots: tests/artifacts/notes-*.png."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from archive.people.services import person_create
from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord, MessageRecord
from archive.store.models import Identity, Message
from archive.store.sink import batch_record
from archive.tags.services import tag_add, tag_colour_set, tag_target
from notes.models import Link, Note
from notes.services.links import LinkSpec, link_kind_add
from notes.services.notes import note_create, note_update
from tasks.services import project_create, task_create
from tests.conftest import OWNER_PASSWORD
from tests.e2e.test_import_page import sign_in
from tests.meetings.factories import meeting

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
T0 = datetime(2026, 11, 2, 9, tzinfo=UTC)

HOSTILE = """# Hostile <script>window.ran = 1; alert("title")</script>

<script>window.ran = 2; alert(1)</script>
<img src=x onerror="window.ran = 3; alert(2)">
<iframe src="javascript:alert(3)"></iframe>
<a href="javascript:alert(4)">raw link</a>
[markdown link](javascript:alert(5)) and [data](data:text/html;base64,PHNjcmlwdD4=)
<svg onload="alert(7)"></svg> <div style="position:fixed;inset:0">cover</div>
[[x|<img src=x onerror=alert(8)>]]
"""


def kinds() -> None:
    # A browser test's flush empties every table, the link kinds its migration seeded too.
    for name in ("mentions", "about", "decision", "follow-up", "source"):
        link_kind_add(name=name)


def a_message_from_alice() -> tuple[Message, Any]:
    """A chat where Alice says something, and Alice Walker, the person she is."""
    batch_record(
        batch=Batch(
            account=AccountRecord(
                provider="telegram",
                external_id="acct",
                name="Phone",
                owner=IdentityRecord(external_id="me", display_name="Me"),
            ),
            chats=(ChatRecord(external_id="house", kind="group", title="House"),),
            identities=(IdentityRecord(external_id="alice", display_name="Alice W"),),
            messages=(
                MessageRecord(
                    chat_external_id="house",
                    external_id="m1",
                    sent_at=T0,
                    text="The roofer can come on the 20th, it will be about 1,400.",
                    sender_external_id="alice",
                ),
            ),
        )
    )
    alice = person_create(
        name="Alice Walker", identity_ids=[Identity.objects.get(external_id="alice").pk]
    )
    return Message.objects.get(external_id="m1"), alice


def a_vault() -> dict[str, Any]:
    """Folders, tagged notes, one rich note linking to a person, a task, a meeting and a
    message, and notes linking back to it."""
    kinds()
    message, alice = a_message_from_alice()
    project_create(key="HOME", name="Home")
    roof = task_create(project="HOME", title="Fix the roof before winter")
    review = meeting("Quarterly review", T0 + timedelta(days=3))

    def made(title: str, body: str, folder: str | None, days: int, **more: Any) -> Note:
        at = T0 + timedelta(days=days)
        return note_create(
            title=title, body=body, folder=folder, created_at=at, updated_at=at, **more
        )

    rich = made(
        "Roof repair plan",
        f"""Talked with [[Alice Walker]] about the leak over the kitchen. She sent the quote:
[[message:{message.public_id}|her message]]. Tracked as [[{roof.key}]].

## What we know

- The flashing around the chimney is loose.
- Scaffolding adds about **1,400** to the price.
- We decide at the [[meeting:{review.public_id}|Quarterly review]].

## To do

- [x] Ask for a second quote
- [ ] Call the insurance, see [[Insurance policy]]
- [ ] Book the scaffolding

| Item | Cost |
|:-----|-----:|
| Flashing | 600 |
| Scaffolding | 800 |

```python
total = 600 + 800
```

> Roofers are booked out until spring — decide early.
""",
        "Home/House",
        5,
        aliases=["Roof"],
        links=[LinkSpec(target=f"message:{message.public_id}", kind="about")],
    )
    made(
        "Kitchen ideas", "Open shelves, and ask [[Alice Walker]] about the tiles.", "Home/House", 4
    )
    made("Garden", "Plant the tulips in October. The [[Roof]] comes first.", "Home", 3)
    made(
        "Client onboarding",
        "Steps for a new client: kickoff, access, first report.",
        "Work/Clients",
        2,
    )
    made("Weekly review", "What went well, what did not, what is next.", "Work", 1)
    made("Reading list", "*The Making of the Atomic Bomb* — long but worth it.", None, 0)
    made("Journal 2026-11-01", "Quiet Sunday. Fixed the bike.", "Journal", -1)
    tag_add(target=tag_target(kind="note", key=rich.public_id), name="house")
    tag_add(target=tag_target(kind="note", key=rich.public_id), name="money")
    tag_colour_set(name="money", colour="#16a34a")
    return {"rich": rich, "alice": alice, "message": message}


@pytest.fixture
def tab(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    viewport, scheme = request.param
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    yield page
    context.close()


def watch(page: Any) -> list[str]:
    """What must never happen: a dialog, a page error, a policy violation."""
    seen: list[str] = []
    page.on("dialog", lambda dialog: (seen.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on("pageerror", lambda error: seen.append(f"page error: {error}"))
    page.on(
        "console",
        lambda msg: (
            seen.append(msg.text)
            if "Content Security Policy" in msg.text or "Refused to" in msg.text
            else None
        ),
    )
    return seen


def nothing_ran(page: Any) -> None:
    """No script but the site's own, no script link, nothing the note wrote as markup."""
    scripts = page.eval_on_selector_all("script", "els => els.map(e => e.getAttribute('src'))")
    assert scripts and all(src and src.startswith("/static/") for src in scripts), scripts
    assert page.locator("iframe, svg, img[src=x], object, embed").count() == 0
    bad = page.eval_on_selector_all(
        "[href], [src]",
        "els => els.map(e => e.getAttribute('href') || e.getAttribute('src'))"
        ".filter(v => /^\\s*(javascript|data|vbscript):/i.test(v))",
    )
    assert bad == []
    handlers = page.eval_on_selector_all(
        "*", "els => els.filter(e => [...e.attributes].some(a => /^on/i.test(a.name))).length"
    )
    assert handlers == 0
    assert page.evaluate("window.ran === undefined")


def wide(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


@pytest.mark.parametrize("tab", [(DESKTOP, "light")], indirect=True)
def test_hostile_notes_never_run(live_server: Any, tab: Any, artifacts_dir: Path) -> None:
    kinds()
    hostile = note_create(title='Evil <img src=x onerror="alert(9)">', body=HOSTILE)
    seen = watch(tab)
    sign_in(tab, live_server)
    tab.goto(live_server.url + reverse("notes:note", args=[hostile.public_id]))
    expect(tab.locator(".note-body")).to_contain_text("raw link")
    expect(tab.locator(".note-body")).to_contain_text("<script>window.ran = 2; alert(1)</script>")
    expect(tab.locator("#note-title")).to_have_text('Evil <img src=x onerror="alert(9)">')
    nothing_ran(tab)
    tab.screenshot(path=str(artifacts_dir / "notes-hostile.png"), full_page=True)
    # The editor's live preview, as the hostile text is typed in.
    tab.goto(live_server.url + reverse("notes:new"))
    tab.get_by_label("Title").fill("Another")
    tab.locator("#n-body").fill(HOSTILE)
    expect(tab.locator("#n-preview")).to_contain_text("markdown link")
    expect(tab.locator("#n-preview h1")).to_contain_text("Hostile")
    nothing_ran(tab)
    assert seen == []


@pytest.mark.parametrize("tab", [(DESKTOP, "light")], indirect=True)
def test_write_a_note_from_a_message_and_find_it_on_the_persons_page(
    live_server: Any, tab: Any, artifacts_dir: Path
) -> None:
    kinds()
    message, alice = a_message_from_alice()
    seen = watch(tab)
    sign_in(tab, live_server)
    tab.goto(live_server.url + reverse("archive:message", args=[message.public_id]))
    expect(tab.locator(".msg.focus")).to_be_visible()
    tab.locator(".msg-notes").get_by_role("link", name="Write a note").click()
    tab.wait_for_url(f"**/notes/new/?link=message:{message.public_id}")
    expect(tab.locator(".nt-about .chip-message")).to_be_visible()

    tab.get_by_label("Title").fill("The roof quote")
    body = tab.locator("#n-body")
    body.click()
    body.press_sequentially("Talked to [[Ali")
    listbox = tab.get_by_role("listbox", name="Link to")
    expect(listbox).to_be_visible()
    option = listbox.get_by_role("option").filter(has_text="Alice Walker")
    expect(option).to_be_visible()
    expect(body).to_have_attribute("aria-expanded", "true")
    tab.screenshot(path=str(artifacts_dir / "notes-suggest-from-message.png"))
    option.click()
    expect(listbox).to_be_hidden()
    body.press_sequentially(" about the price.")
    expect(body).to_have_value("Talked to [[Alice Walker]] about the price.")
    expect(tab.locator("#n-preview .chip-person")).to_have_text("Alice Walker")
    tab.get_by_role("button", name="Save", exact=True).click()
    tab.wait_for_url("**/notes/note_*/")
    expect(tab.locator(".note-body .chip-person")).to_have_text("Alice Walker")

    made = Note.objects.get(title="The roof quote")
    assert made.body == "Talked to [[Alice Walker]] about the price."
    assert Link.objects.filter(
        source_id=made.pk, kind="about", target_kind="message", target_id=message.pk
    ).exists()
    tab.locator(".note-body .chip-person").click()
    tab.wait_for_url(f"**{reverse('archive:person', args=[alice.pk])}")
    backlinks = tab.locator(f"#notes-person-{alice.pk}")
    expect(backlinks.get_by_role("link", name="The roof quote")).to_be_visible()
    expect(backlinks).to_contain_text("Talked to Alice Walker about the price.")
    tab.screenshot(path=str(artifacts_dir / "notes-person-backlink.png"), full_page=True)
    assert seen == []


@pytest.mark.parametrize("tab", [(DESKTOP, "light")], indirect=True)
def test_keys_pick_a_suggestion_and_autosave_keeps_the_revision(live_server: Any, tab: Any) -> None:
    kinds()
    person_create(name="Sam Lee")
    project_create(key="HOME", name="Home")
    task_create(project="HOME", title="Samples to the lab")
    sign_in(tab, live_server)
    tab.goto(live_server.url + reverse("notes:new"))
    tab.get_by_label("Title").fill("Keys")
    body = tab.locator("#n-body")
    body.click()
    body.press_sequentially("[[Sam")
    options = tab.get_by_role("listbox", name="Link to").get_by_role("option")
    expect(options).to_have_count(2)
    expect(options.nth(0)).to_have_attribute("aria-selected", "true")
    body.press("ArrowDown")
    expect(options.nth(1)).to_have_attribute("aria-selected", "true")
    expect(options.nth(1)).to_contain_text("HOME-1")
    body.press("Tab")
    expect(body).to_have_value("[[HOME-1]]")
    body.press_sequentially(" and [[Sa")
    expect(options.nth(0)).to_contain_text("Sam Lee")
    body.press("Escape")
    expect(tab.get_by_role("listbox", name="Link to")).to_be_hidden()
    body.press_sequentially("m")
    expect(options.nth(0)).to_be_visible()
    body.press("Enter")
    expect(body).to_have_value("[[HOME-1]] and [[Sam Lee]]")
    # The new note saves itself a moment after the last keystroke, and becomes the note
    # the page edits.
    expect(tab.locator("#n-status")).to_contain_text("Saved · revision")
    tab.wait_for_url("**/notes/note_*/edit/")
    made = Note.objects.get(title="Keys")
    assert made.body == "[[HOME-1]] and [[Sam Lee]]"
    body.press_sequentially(".")
    expect(tab.locator("#n-status")).to_contain_text(f"Saved · revision {made.revision + 1}")
    expect(tab.locator("#n-revision")).to_have_value(str(made.revision + 1))
    made.refresh_from_db()
    assert made.body == "[[HOME-1]] and [[Sam Lee]]."
    saved = made.revision
    tab.keyboard.press("Control+s")  # saves as the button does
    tab.wait_for_url(f"**/notes/{made.public_id}/")
    made.refresh_from_db()
    assert made.revision == saved  # nothing new to save
    assert Note.objects.count() == 1


def test_two_tabs_never_overwrite_each_other(
    live_server: Any, browser: Any, artifacts_dir: Path
) -> None:
    kinds()
    shared = note_create(title="Shared plan", body="Start here.\n")
    context = browser.new_context(viewport=DESKTOP)
    first, second = context.new_page(), context.new_page()
    sign_in(first, live_server)
    edit = live_server.url + reverse("notes:edit", args=[shared.public_id])
    first.goto(edit)
    second.goto(edit)
    expect(second.locator("#n-revision")).to_have_value("1")

    first.locator("#n-body").click()
    first.keyboard.press("Control+End")
    first.keyboard.type("From the first tab.")
    expect(first.locator("#n-status")).to_contain_text("Saved · revision")
    shared.refresh_from_db()
    assert shared.body == "Start here.\nFrom the first tab."
    expect(second.locator("#n-revision")).to_have_value("1")  # the second tab knows nothing

    second.locator("#n-body").click()
    second.keyboard.press("Control+End")
    second.keyboard.type("From the second tab.")
    # Its autosave names revision 1: refused, and the page shows both texts.
    expect(
        second.get_by_role("heading", name="This note changed while you were editing it")
    ).to_be_visible()
    yours = second.locator(".nt-side-yours pre")
    saved = second.locator(".nt-side-saved pre")
    expect(yours).to_have_text("Start here.\nFrom the second tab.")
    expect(saved).to_have_text("Start here.\nFrom the first tab.")
    before = shared.revision
    shared.refresh_from_db()
    assert (shared.revision, shared.body) == (before, "Start here.\nFrom the first tab.")
    merge_box = second.get_by_role("textbox", name="Text", exact=True)
    expect(merge_box).to_have_value(
        "Start here.\n<<<<<<< yours\nFrom the second tab.\n"
        "=======\nFrom the first tab.\n>>>>>>> saved"
    )
    merge_box.fill("Start here.\nFrom the first tab.\nFrom the second tab.")
    second.get_by_role("button", name="Save the merge").click()
    second.wait_for_url(f"**/notes/{shared.public_id}/")
    shared.refresh_from_db()
    assert shared.revision == before + 1
    assert shared.body == "Start here.\nFrom the first tab.\nFrom the second tab."
    context.close()


def test_the_editor_works_without_javascript(live_server: Any, browser: Any) -> None:
    from archive.owner.services import login_code_issue, owner_set_password

    kinds()
    owner_set_password(code=login_code_issue().code, password=OWNER_PASSWORD)
    context = browser.new_context(viewport=PHONE, java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server.url + "/login/")
    page.get_by_label("Password").fill(OWNER_PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(live_server.url + "/")
    page.goto(live_server.url + reverse("notes:new"))
    page.get_by_label("Title").fill("No script")
    page.get_by_label("Markdown").fill("Plain **form** and [[Nobody]].")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#n-preview strong")).to_have_text("form")
    assert Note.objects.count() == 0
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_url("**/notes/note_*/")
    expect(page.locator(".note-body .chip-missing")).to_have_text("Nobody")
    made = Note.objects.get()
    page.goto(live_server.url + reverse("notes:edit", args=[made.public_id]))
    note_update(public_id=made.public_id, revision=1, body="Changed elsewhere.")
    page.get_by_label("Markdown").fill("Changed here.")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(
        page.get_by_role("heading", name="This note changed while you were editing it")
    ).to_be_visible()
    page.get_by_role("button", name="Keep yours").click()
    page.wait_for_url(f"**/notes/{made.public_id}/")
    made.refresh_from_db()
    assert (made.revision, made.body) == (3, "Changed here.")
    context.close()


@pytest.mark.parametrize(
    ("tab", "suffix"),
    [
        ((DESKTOP, "light"), "1280"),
        ((DESKTOP, "dark"), "1280-dark"),
        ((PHONE, "light"), "390"),
        ((PHONE, "dark"), "390-dark"),
    ],
    indirect=["tab"],
)
def test_screenshots(live_server: Any, tab: Any, suffix: str, artifacts_dir: Path) -> None:
    world = a_vault()
    rich = world["rich"]
    seen = watch(tab)
    width = tab.viewport_size["width"]
    sign_in(tab, live_server)

    tab.goto(live_server.url + reverse("notes:list"))
    expect(tab.locator(".nt-row")).to_have_count(7)
    assert wide(tab) <= width
    tab.screenshot(path=str(artifacts_dir / f"notes-list-{suffix}.png"), full_page=True)
    tab.locator("#nt-q").fill("roof")
    expect(tab.locator("#note-results mark").first).to_be_visible()
    tab.screenshot(path=str(artifacts_dir / f"notes-search-{suffix}.png"), full_page=True)

    tab.goto(live_server.url + reverse("notes:note", args=[rich.public_id]))
    expect(tab.locator(".note-body .chip-person")).to_have_text("Alice Walker")
    expect(tab.locator(".note-body .chip-missing")).to_have_text("Insurance policy")
    expect(tab.locator(".backlinks li.backlink")).to_have_count(1)
    assert wide(tab) <= width
    tab.screenshot(path=str(artifacts_dir / f"notes-note-{suffix}.png"), full_page=True)

    tab.goto(live_server.url + reverse("notes:edit", args=[rich.public_id]))
    body = tab.locator("#n-body")
    body.click()
    tab.keyboard.press("Control+Home")
    body.press_sequentially("With [[Al")
    expect(tab.get_by_role("listbox", name="Link to").get_by_role("option").first).to_be_visible()
    assert wide(tab) <= width
    tab.evaluate("window.scrollTo(0, 0)")
    tab.screenshot(path=str(artifacts_dir / f"notes-editor-{suffix}.png"))
    tab.keyboard.press("Escape")
    expect(tab.locator("#n-status")).to_contain_text("Saved · revision 2")

    # Another tab saves; this one's next save is refused with both texts.
    note_update(public_id=rich.public_id, revision=2, body=rich.body + "\nAdded in another tab.\n")
    body.press_sequentially("ice")
    expect(
        tab.get_by_role("heading", name="This note changed while you were editing it")
    ).to_be_visible()
    assert wide(tab) <= width
    tab.screenshot(path=str(artifacts_dir / f"notes-conflict-{suffix}.png"), full_page=True)

    tab.goto(live_server.url + reverse("notes:revisions", args=[rich.public_id]))
    expect(tab.locator(".nt-diff-new").first).to_be_visible()
    assert wide(tab) <= width
    tab.screenshot(path=str(artifacts_dir / f"notes-revisions-{suffix}.png"), full_page=True)
    assert seen == []


@pytest.mark.parametrize("tab", [(PHONE, "light")], indirect=True)
def test_notes_is_in_the_menu_which_stays_one_row(live_server: Any, tab: Any) -> None:
    sign_in(tab, live_server)
    tab.goto(live_server.url + reverse("notes:list"))
    bar = tab.get_by_role("navigation", name="Main")
    for width in (320, 390, 800, 801, 1000, 1080, 1081, 1280):
        tab.set_viewport_size({"width": width, "height": 800})
        assert wide(tab) <= width, width
        assert tab.locator("header.topbar").bounding_box()["height"] <= 64, width
        in_bar = bar.locator("> a:visible", has_text="Notes")
        if width > 800:
            expect(in_bar).to_have_attribute("aria-current", "page")
        else:
            expect(in_bar).to_have_count(0)
            tab.locator("details.more-menu > summary").click()
            notes = tab.locator(".more-panel").get_by_role("link", name="Notes", exact=True)
            expect(notes).to_have_attribute("aria-current", "page")
            tab.keyboard.press("Escape")
