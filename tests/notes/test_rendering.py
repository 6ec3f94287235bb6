"""A note's Markdown as HTML (notes/rendering.py): what Markdown draws (tables with their
alignment as classes, task lists, fenced code with its language, bare web links), what it
never lets through (raw HTML, script and data links however spelled, handlers, styles),
`[[links]]` as chips from the targets given, and a long note's cost bounded. The diff and
the conflict merge of notes/textdiff.py."""

from __future__ import annotations

import time
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest

from notes.rendering import MARKDOWN_MAX, chip_html, note_html, target_key, written_target
from notes.selectors import Target
from notes.textdiff import BETWEEN, MINE, THEIRS, merge, text_diff

ALICE = Target("person", "person:1", "Alice Walker", "/people/1/", True)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {name: value or "" for name, value in attrs}))


def tags(html: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.found


def links(html: str) -> list[str]:
    return [attrs.get("href", "") for tag, attrs in tags(html) if tag == "a"]


# --- what Markdown draws -------------------------------------------------------------------


def test_commonmark_with_tables_tasks_code_and_bare_links() -> None:
    html = note_html(
        "# Title\n\n**bold** *it* ~~gone~~ `code`\n\n"
        "| left | mid | right |\n|:--|:-:|--:|\n| a | b | c |\n\n"
        "- [ ] to do\n- [x] done\n- plain\n\n"
        "```python\nprint('<b>')\n```\n\n"
        "    indented <code>\n\n"
        "see https://example.org/a_(b). and <https://example.org/z>\n\n> quoted\n\n---\n"
    )
    assert "<h1>Title</h1>" in html
    assert "<strong>bold</strong> <em>it</em> <s>gone</s> <code>code</code>" in html
    assert '<th class="align-left">left</th>' in html
    assert '<td class="align-center">b</td>' in html and '<td class="align-right">c</td>' in html
    assert "style=" not in html  # the page's policy refuses style attributes
    assert '<li class="task"><input type="checkbox" disabled=""> to do</li>' in html
    assert '<li class="task"><input type="checkbox" disabled="" checked=""> done</li>' in html
    assert "<li>plain</li>" in html
    assert "<pre data-language=\"python\"><code>print('&lt;b&gt;')" in html
    assert "<pre><code>indented &lt;code&gt;" in html
    assert links(html) == ["https://example.org/a_(b)", "https://example.org/z"]
    outside = [attrs for tag, attrs in tags(html) if tag == "a"]
    assert all(a["target"] == "_blank" and "noopener" in a["rel"] for a in outside)
    assert "<blockquote>" in html and "<hr>" in html


@pytest.mark.parametrize(
    "written",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<iframe src="https://example.org"></iframe>',
        '<a href="javascript:alert(1)">x</a>',
        "<svg onload=alert(1)>",
        '<div style="color:red">x</div>',
        "<style>body{display:none}</style>",
        "<!-- a comment -->",
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](java\tscript:alert(1))",
        "[x](jav&#x61;script:alert(1))",
        "[x](javascript&colon;alert(1))",
        "[x](%6Aavascript:alert(1))",
        "[x]( javascript:alert(1))",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        "[x](vbscript:msgbox(1))",
        "[x](file:///etc/passwd)",
        "[x](//evil.example/x)",
        "<javascript:alert(1)>",
        "![x](javascript:alert(1))",
        "[ref]\n\n[ref]: javascript:alert(1)",
        "[[javascript:alert(1)]]",
        "[[x|<img src=x onerror=alert(1)>]]",
    ],
)
def test_nothing_written_runs(written: str) -> None:
    html = note_html(written, targets={})
    for tag, attrs in tags(html):
        assert tag not in ("script", "img", "iframe", "svg", "style", "div", "object"), html
        assert not [name for name in attrs if name.startswith("on") or name == "style"], html
        for name in ("href", "src"):
            value = attrs.get(name, "").strip().lower()
            assert not value.startswith(("javascript", "data", "vbscript", "file", "//")), html
            if value:  # as a browser resolves it on a note's page
                resolved = urlsplit(urljoin("https://wirecat.example/notes/n/", value))
                assert resolved.scheme in ("http", "https", "mailto"), html


def test_paths_of_this_site_and_mail_stay_links() -> None:
    html = note_html("[a](/notes/) [b](mailto:ann@example.org) [c](https://example.org)")
    assert links(html) == ["/notes/", "mailto:ann@example.org", "https://example.org"]


# --- chips ---------------------------------------------------------------------------------


def test_links_become_chips_from_the_targets_given() -> None:
    task = Target("task", "task:HOME-1", "HOME-1 Fix the roof", "/tasks/HOME-1/", True)
    missing_task = Target("task", "task:HOME-9", "HOME-9", None, False, "not in the archive")
    html = note_html(
        "Met [[alice walker]] and [[Alice Walker|Ali]] about [[HOME-1]], [[HOME-9]],"
        " [[Nobody Yet#part]] and `[[in code]]`.",
        targets={"alice walker": ALICE, "home-1": task, "home-9": missing_task},
    )
    assert '<a class="chip chip-person" href="/people/1/"' in html
    assert ">Alice Walker</a>" in html and ">Ali</a>" in html
    assert 'href="/tasks/HOME-1/"' in html and ">HOME-1 Fix the roof</a>" in html
    assert (
        '<span class="chip chip-missing" title="task:HOME-9: not in the archive">HOME-9</span>'
        in html
    )
    assert 'href="/notes/new/?title=Nobody+Yet"' in html and ">Nobody Yet</a>" in html
    assert "<code>[[in code]]</code>" in html


def test_a_chip_escapes_what_it_shows() -> None:
    hostile = Target("note", "note:x", '<b>"x"</b>', '/notes/x/?a="b"', True, "<i>")
    html = chip_html(hostile, "w")
    assert "<b>" not in html and "<i>" not in html and '"b"' not in html
    assert "&lt;b&gt;" in html


def test_target_keys_fold_as_links_do() -> None:
    assert target_key("  Álice   WALKER ") == target_key("alice walker")
    assert written_target("Alias|shown text") == ("Alias", "shown text")
    assert written_target("Note#Heading") == ("Note", "")
    assert written_target("https://example.org/#x") == ("https://example.org/#x", "")


def test_a_long_note_is_drawn_in_bounded_time() -> None:
    para = "Some **bold** words and a [[Link]] and https://example.org/x here.\n\n"
    body = para * (1_000_000 // len(para))
    started = time.perf_counter()
    html = note_html(body)
    assert time.perf_counter() - started < 10
    assert "shown as written" in html
    drawn, rest = html.split('<pre class="note-rest">', 1)
    assert drawn.count("<strong>") <= MARKDOWN_MAX // len(para) + 1
    assert "**bold**" in rest
    started = time.perf_counter()
    note_html("[" * 1_000_000)
    assert time.perf_counter() - started < 15


# --- diffs and merges ----------------------------------------------------------------------


def test_the_diff_marks_lines_and_the_words_inside_them() -> None:
    old = "\n".join(f"line {i}" for i in range(20))
    new = old.replace("line 10", "line ten") + "\nadded"
    diff = text_diff(old, new)
    assert (diff.added, diff.removed) == (2, 1)
    kinds = [line.kind for line in diff.lines]
    assert kinds[0] == "fold" and "old" in kinds and "new" in kinds
    changed = next(line for line in diff.lines if line.kind == "old")
    assert [(p.text, p.changed) for p in changed.pieces] == [("line ", False), ("10", True)]
    assert changed.old_number == 11
    assert text_diff("same", "same").same


def test_a_merge_takes_each_sides_changes_and_marks_where_both_changed() -> None:
    base = "a\nb\nc\nd\ne\n"
    clean = merge(base, "a\nB\nc\nd\ne\n", "a\nb\nc\nD\ne\n")
    assert clean.text == "a\nB\nc\nD\ne\n" and clean.conflicts == 0
    same = merge(base, "a\nX\nc\nd\ne\n", "a\nX\nc\nd\ne\n")
    assert same.text == "a\nX\nc\nd\ne\n" and same.conflicts == 0
    both = merge(base, "a\nmine\nc\nd\ne\n", "a\ntheirs\nc\nd\ne\n")
    assert both.conflicts == 1
    assert both.text == f"a\n{MINE}\nmine\n{BETWEEN}\ntheirs\n{THEIRS}\nc\nd\ne\n"
    appended = merge(base, base + "mine\n", base)
    assert appended.text == base + "mine\n"
