"""A note's Markdown as HTML, for the note page and the editor's preview.

CommonMark with tables, strikethrough, task lists (`- [ ]`), fenced code (its language as
`data-language`) and bare web links made clickable; `[[links]]` become chips naming what
they link to. Raw HTML written in a note is shown as text, never run, and everything
passes nh3's allow-list at the end: a link keeps only http(s), mailto and the site's own
paths, so `javascript:`, `data:` and `vbscript:` never become an href.

No store here: what each `[[link]]` names comes in as `targets`, keyed by the link's
target as written, folded (`target_key`); the pages build it from a note's saved links
or, for an unsaved preview, by resolving the written names (notes/reads.py).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import nh3
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from notes.references import KEY_MAX, NAME_MAX, fold
from notes.selectors import Target

# The same shape as notes.references' `[[…]]` (its target, then `|shown`, then `#heading`).
_WIKI = re.compile(r"!?\[\[([^\[\]\n]{1," + str(NAME_MAX + 40) + r"})\]\]")
_LANGUAGE = re.compile(r"^[A-Za-z0-9_+#.-]{1,32}$")
_TASK = re.compile(r"^\[([ xX])\][ \t]+")
_ALIGN = re.compile(r"text-align:\s*(left|center|right)")
_BARE_URL = re.compile(r"\bhttps?://[^\s<>\"'\x00-\x1f]+", re.IGNORECASE)
_TRAILING = ".,;:!?)]}'\"*_~|"
# Characters of a body drawn as Markdown; the rest is shown as written (markdown-it-py
# takes about a second for this much ordinary text, a few for the worst).
MARKDOWN_MAX = 150_000
KINDS = (
    "note",
    "message",
    "chat",
    "person",
    "meeting",
    "task",
    "attachment",
    "conversation",
    "url",
)
KIND_NAMES = {
    "note": "Note",
    "message": "Message",
    "chat": "Chat",
    "person": "Person",
    "meeting": "Meeting",
    "task": "Task",
    "attachment": "File",
    "conversation": "Conversation",
    "url": "Web page",
}


def target_key(written: str) -> str:
    """The key a `[[link]]`'s written target is looked up by in `targets`."""
    return fold(written)


def written_target(inner: str) -> tuple[str, str]:
    """(target as written, shown text) of a `[[…]]`'s inside, as notes.references reads it."""
    target, _, label = inner.partition("|")
    target = target.split("#", 1)[0].strip() if "://" not in target else target.strip()
    return target[:KEY_MAX], label.strip()[:NAME_MAX]


# --- markdown-it rules ------------------------------------------------------------------


def _wikilink(state: StateInline, silent: bool) -> bool:
    """`[[target]]`, `[[target|shown]]`, `![[embed]]`: one token each, drawn as a chip."""
    start = state.pos
    if state.src[start] not in "[!":
        return False
    found = _WIKI.match(state.src, start, state.posMax)
    if found is None:
        return False
    target, label = written_target(found.group(1))
    if not target:
        return False
    if not silent:
        token = state.push("wikilink", "a", 0)
        token.meta = {"target": target, "label": label}
        token.content = found.group(0)
    state.pos = found.end()
    return True


def _link_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for match in _BARE_URL.finditer(text):
        trimmed = match.group(0)
        # Punctuation ending a sentence is not the address's, but a closing parenthesis
        # that one in the address opened is (as in wiki addresses).
        while trimmed and trimmed[-1] in _TRAILING:
            if trimmed[-1] == ")" and trimmed.count("(") >= trimmed.count(")"):
                break
            trimmed = trimmed[:-1]
        if len(trimmed) > len("https://"):
            spans.append((match.start(), match.start() + len(trimmed)))
    return spans


def _text(content: str) -> Token:
    token = Token("text", "", 0)
    token.content = content
    return token


def _bare_links(state: StateCore) -> None:
    """Web addresses written bare in text become links (not inside a link or code)."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        inside = 0
        for token in block.children:
            if token.type == "link_open":
                inside += 1
            elif token.type == "link_close":
                inside = max(0, inside - 1)
            if token.type != "text" or inside or "http" not in token.content.lower():
                children.append(token)
                continue
            position, content = 0, token.content
            for start, end in _link_spans(content):
                if start > position:
                    children.append(_text(content[position:start]))
                opening = Token("link_open", "a", 1)
                opening.attrs = {"href": content[start:end]}
                children.extend([opening, _text(content[start:end]), Token("link_close", "a", -1)])
                position = end
            if position < len(content):
                children.append(_text(content[position:]))
        block.children = children


def _task_lists(state: StateCore) -> None:
    """`- [ ] x` and `- [x] x`: a list item starting so is a task with its box."""
    tokens = state.tokens
    for index in range(2, len(tokens)):
        inline = tokens[index]
        if (
            inline.type != "inline"
            or tokens[index - 1].type != "paragraph_open"
            or tokens[index - 2].type != "list_item_open"
            or not inline.children
            or inline.children[0].type != "text"
        ):
            continue
        first = inline.children[0]
        found = _TASK.match(first.content)
        if found is None:
            continue
        first.content = first.content[found.end() :]
        box = Token("task_box", "input", 0)
        box.meta = {"done": found.group(1) != " "}
        inline.children.insert(0, box)
        tokens[index - 2].attrSet("class", "task")


# Render rules: (renderer, tokens, index, options, env) -> HTML.


def _chip(r: RendererHTML, tokens: Sequence[Token], idx: int, o: Any, env: Any) -> str:
    meta = tokens[idx].meta
    targets: Mapping[str, Target] = env.get("targets", {})
    target = targets.get(target_key(meta["target"]))
    return chip_html(target, meta["target"], meta["label"], new_url=env.get("new_url"))


def _task_box(r: RendererHTML, tokens: Sequence[Token], idx: int, o: Any, env: Any) -> str:
    checked = " checked" if tokens[idx].meta.get("done") else ""
    return f'<input type="checkbox" disabled{checked}> '


def _fence(r: RendererHTML, tokens: Sequence[Token], idx: int, o: Any, env: Any) -> str:
    token = tokens[idx]
    language = token.info.strip().split(" ", 1)[0] if token.info else ""
    attribute = f' data-language="{html.escape(language)}"' if _LANGUAGE.match(language) else ""
    code = html.escape(token.content, quote=False)
    return f"<pre{attribute}><code>{code}</code></pre>\n"


def _link_open(r: RendererHTML, tokens: Sequence[Token], idx: int, o: Any, env: Any) -> str:
    href = str(tokens[idx].attrGet("href") or "")
    quoted = html.escape(href, quote=True)
    if re.match(r"^https?://", href, re.IGNORECASE):  # another site: a new tab
        return f'<a href="{quoted}" title="{quoted}" target="_blank">'
    return f'<a href="{quoted}">'


def _cell(tag: str) -> Any:
    def render(r: RendererHTML, tokens: Sequence[Token], idx: int, o: Any, env: Any) -> str:
        # markdown-it aligns a column with a style attribute, which the page's CSP refuses.
        found = _ALIGN.search(str(tokens[idx].attrGet("style") or ""))
        return f'<{tag} class="align-{found.group(1)}">' if found else f"<{tag}>"

    return render


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False})
    md.enable(["table", "strikethrough"])
    md.disable(["html_block", "html_inline", "image"])
    md.inline.ruler.before("link", "wikilink", _wikilink)
    md.core.ruler.push("notes_bare_links", _bare_links)
    md.core.ruler.push("notes_task_lists", _task_lists)
    md.add_render_rule("wikilink", _chip)
    md.add_render_rule("task_box", _task_box)
    md.add_render_rule("fence", _fence)
    md.add_render_rule("code_block", _fence)
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("th_open", _cell("th"))
    md.add_render_rule("td_open", _cell("td"))
    return md


_MD = _markdown()

# --- chips ------------------------------------------------------------------------------


def _new_note_url(title: str, base: str | None = None) -> str:
    return (base or reverse("notes:new")) + "?" + urlencode({"title": title[:NAME_MAX]})


def chip_html(
    target: Target | None, written: str, label: str = "", *, new_url: str | None = None
) -> str:
    """One `[[link]]` as a chip: what it names (its kind, its name, a link to its page), or,
    dashed, a name that names nothing yet (a link to write that note, as Obsidian offers)
    or a reference the archive does not hold."""
    if target is not None and target.exists and target.url:
        kind = target.kind if target.kind in KINDS else "note"
        shown = label or target.label or written
        about = KIND_NAMES[kind] + (f" · {target.detail}" if target.detail else "")
        if target.kind == "url":
            about = target.url
        opens = ' target="_blank"' if kind == "url" else ""
        return (
            f'<a class="chip chip-{kind}" href="{html.escape(target.url)}"'
            f' title="{html.escape(about)}"{opens}>{html.escape(shown, quote=False)}</a>'
        )
    if target is not None and target.kind and target.ref:  # a typed reference held nowhere
        shown = label or written
        about = f"{target.ref}: not in the archive"
        return (
            f'<span class="chip chip-missing" title="{html.escape(about)}">'
            f"{html.escape(shown, quote=False)}</span>"
        )
    shown = label or written
    about = f"No note or person is called “{written}” yet: write the note"
    return (
        f'<a class="chip chip-missing" href="{html.escape(_new_note_url(written, new_url))}"'
        f' title="{html.escape(about)}">{html.escape(shown, quote=False)}</a>'
    )


# --- the sanitiser ----------------------------------------------------------------------

_TAGS = {
    "p", "br", "hr", "strong", "em", "s", "del", "code", "pre", "blockquote", "a", "span",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "input",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
_ALIGNED = {"align-left", "align-center", "align-right"}
_CHIPS = {"chip", "chip-missing", *(f"chip-{kind}" for kind in KINDS)}


def _attribute(tag: str, name: str, value: str) -> str | None:
    if name == "href":
        # A path of this site or an absolute URL (nh3 checks its scheme); never `//host`
        # or a backslash, which browsers read as another host.
        return None if value.startswith("//") or "\\" in value else value
    if name == "data-language":
        return value if _LANGUAGE.match(value) else None
    if name == "start":
        return value if value.isdigit() and len(value) < 10 else None
    if name == "target":
        return "_blank"
    if tag == "input" and name == "type":
        return "checkbox" if value == "checkbox" else None
    return value


_CLEANER = nh3.Cleaner(
    tags=_TAGS,
    clean_content_tags={"script", "style"},
    attributes={
        "a": {"href", "title", "target"},
        "span": {"title"},
        "pre": {"data-language"},
        "ol": {"start"},
        "input": {"type", "checked", "disabled"},
    },
    attribute_filter=_attribute,
    allowed_classes={
        "a": _CHIPS,
        "span": _CHIPS,
        "li": {"task"},
        "p": {"note-rest-said"},
        "pre": {"note-rest"},
        "th": _ALIGNED,
        "td": _ALIGNED,
    },
    url_schemes={"http", "https", "mailto"},
    url_relative="pass_through",
    link_rel="noopener nofollow noreferrer",
)


def clean(fragment: str) -> SafeString:
    """`fragment` through the allow-list."""
    return mark_safe(_CLEANER.clean(fragment))  # noqa: S308 - nh3 cleaned it


def _split(body: str) -> tuple[str, str]:
    """The part of a body drawn as Markdown and the rest (past MARKDOWN_MAX characters,
    from a paragraph's start where one is near)."""
    if len(body) <= MARKDOWN_MAX:
        return body, ""
    cut = body.rfind("\n\n", MARKDOWN_MAX * 3 // 4, MARKDOWN_MAX)
    cut = cut + 2 if cut >= 0 else MARKDOWN_MAX
    return body[:cut], body[cut:]


def note_html(body: str, *, targets: Mapping[str, Target] | None = None) -> SafeString:
    """A note's Markdown as safe HTML, its `[[links]]` as chips from `targets` (by
    `target_key` of the written target; a link missing from it shows as a name that names
    nothing yet). Past MARKDOWN_MAX characters the text follows as it is written, so no
    note makes its page slow."""
    drawn, rest = _split(str(body or ""))
    env = {"targets": dict(targets or {}), "new_url": reverse("notes:new")}
    out = _MD.render(drawn, env)
    if rest:
        out += (
            f'<p class="note-rest-said">The rest of this note, past its first'
            f" {MARKDOWN_MAX:,} characters, is shown as written:</p>"
            f'<pre class="note-rest">{html.escape(rest, quote=False)}</pre>'
        )
    return clean(out)
