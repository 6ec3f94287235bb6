"""A message's text as HTML with its formatting, for every page that shows a message.

Which markup a text carries is the connectors' knowledge (`registry.text_markup`); this
module draws each kind, by its name:

- "entities": Telegram's formatting kept beside the plain text, either as the export's
  list of fragments (`{"type": "bold", "text": …}`) or as the Bot API's entities with
  UTF-16 offsets (which nest, never cross). Anything else (Telethon's list of entity
  class names) leaves the text plain.
- "markdown": Discord's flavour, through markdown-it (CommonMark, raw HTML off): `**bold**`,
  `*italic*`, `__underline__`, `~~strike~~`, code and fences with their language, `> `
  quotes (one line, `>>> ` for the rest), `||spoilers||`, masked links, bare links, and
  `<@id>` mentions named from the message's metadata. No images, no indented code, no
  setext headings, no rules: Discord has none of them.
- "mrkdwn": Slack's and WhatsApp's `*bold*`, `_italic_`, `~strike~`, `` `code` ``,
  ```` ```blocks``` ```` and `> ` quote lines.
- anything else ("mail", "plain"): the text with its web links clickable.

Every result passes nh3 with an allow-list of tags, classes and attributes; links keep
only http(s) and mailto, open in a new tab with rel="noopener nofollow noreferrer".
Formatting is drawn for the first MAX_FORMATTED characters; the rest of a longer text
follows as plain text, so no input makes a page slow.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import nh3
from django.template.defaultfilters import linebreaksbr
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from archive.store.rendering import text_of, web_url
from archive.templatetags.wirecat_text import linkify

MAX_FORMATTED = 8_000  # Discord allows 4,000 characters, Telegram 4,096
MAX_ENTITIES = 500

# --- the sanitiser --------------------------------------------------------------------

_TAGS = {
    "p", "br", "strong", "em", "u", "s", "del", "code", "pre", "blockquote", "a", "span",
    "ul", "ol", "li", "h1", "h2", "h3",
}  # fmt: skip
_LANGUAGE = re.compile(r"^[A-Za-z0-9_+#.-]{1,32}$")


def _attribute(tag: str, name: str, value: str) -> str | None:
    if name == "data-language":
        return value if _LANGUAGE.match(value) else None
    if name == "tabindex":
        return "0"  # a spoiler takes focus in reading order, never ahead of it
    if name == "start":
        return value if value.isdigit() and len(value) < 10 else None
    return value


_CLEANER = nh3.Cleaner(
    tags=_TAGS,
    clean_content_tags={"script", "style"},
    attributes={
        "a": {"href", "title"},
        "pre": {"data-language"},
        "ol": {"start"},
        "span": {"tabindex"},
    },
    attribute_filter=_attribute,
    allowed_classes={"span": {"spoiler", "mention"}},
    set_tag_attribute_values={"a": {"target": "_blank"}},
    url_schemes={"http", "https", "mailto"},
    url_relative="deny",
    link_rel="noopener nofollow noreferrer",
)


def clean(fragment: str) -> SafeString:
    """`fragment` through the allow-list: what a message's text may become on a page."""
    return mark_safe(_CLEANER.clean(fragment))  # noqa: S308 - nh3 cleaned it


# --- plain text and links -------------------------------------------------------------------

# http(s) links only: other schemes (javascript:, data:, file:) stay plain text.
_LINK = re.compile(r"\bhttps?://[^\s<>\"'\x00-\x1f]+", re.IGNORECASE)
_TRAILING = ".,;:!?)]}'\"*_~|"


def _link_spans(text: str) -> list[tuple[int, int]]:
    """Where the web links of `text` are (a closing parenthesis that belongs to the URL,
    as in wiki links, stays in it)."""
    found: list[tuple[int, int]] = []
    for match in _LINK.finditer(text):
        url = match.group(0)
        trimmed = url.rstrip(_TRAILING)
        if url.endswith(")") and trimmed.count("(") > trimmed.count(")"):
            trimmed += ")"
        if len(trimmed) > len("https://"):
            found.append((match.start(), match.start() + len(trimmed)))
    return found


def _anchor(href: str, label_html: str) -> str:
    quoted = html.escape(href, quote=True)
    return f'<a href="{quoted}" title="{quoted}">{label_html}</a>'


def _plain(text: str, *, breaks: bool = True, links: bool = True) -> str:
    """`text` escaped, its web links clickable, its line breaks kept."""
    out: list[str] = []
    position = 0
    for start, end in _link_spans(text) if links else []:
        out.append(html.escape(text[position:start], quote=False))
        out.append(_anchor(text[start:end], html.escape(text[start:end], quote=False)))
        position = end
    out.append(html.escape(text[position:], quote=False))
    joined = "".join(out)
    return joined.replace("\n", "<br>\n") if breaks else joined


def plain_html(text: str) -> SafeString:
    """Plain text for a page: escaped, web links clickable, line breaks kept."""
    return linebreaksbr(linkify(text or ""))


def _split(text: str) -> tuple[str, str]:
    """The part of `text` whose formatting is drawn, and the rest."""
    if len(text) <= MAX_FORMATTED:
        return text, ""
    return text[:MAX_FORMATTED], text[MAX_FORMATTED:]


def _tail(rest: str) -> str:
    return _plain(rest) if rest else ""


# --- Telegram: fragments and offset entities --------------------------------------------------

_WRAP: dict[str, tuple[str, str]] = {
    "bold": ("<strong>", "</strong>"),
    "italic": ("<em>", "</em>"),
    "underline": ("<u>", "</u>"),
    "strikethrough": ("<s>", "</s>"),
    "code": ("<code>", "</code>"),
    "spoiler": ('<span class="spoiler" tabindex="0">', "</span>"),
    "blockquote": ("<blockquote>", "</blockquote>"),
    "expandable_blockquote": ("<blockquote>", "</blockquote>"),
    "mention": ('<span class="mention">', "</span>"),
    "mention_name": ('<span class="mention">', "</span>"),
    "text_mention": ('<span class="mention">', "</span>"),
}
_HOST_LIKE = re.compile(r"^[\w-]+(\.[\w-]+)+(:\d+)?(/\S*)?$", re.UNICODE)


def _link_target(kind: str, text: str, entity: Mapping[str, Any]) -> str:
    """Where a link entity points ("" when nowhere safe)."""
    if kind == "text_link":
        return web_url(entity.get("href") or entity.get("url"))
    if kind in ("link", "url"):
        candidate = text.strip()
        if not re.match(r"^[a-z][a-z0-9+.-]*://", candidate, re.IGNORECASE):
            candidate = f"https://{candidate}" if _HOST_LIKE.match(candidate) else ""
        return web_url(candidate)
    if kind == "email":
        address = text.strip()
        return f"mailto:{address}" if re.match(r"^[^@\s<>\"']+@[^@\s<>\"']+$", address) else ""
    return ""


def _wrap(kind: str, inner_html: str, text: str, entity: Mapping[str, Any]) -> str:
    if kind == "pre":
        language = text_of(entity.get("language"), 40)
        attribute = f' data-language="{html.escape(language)}"' if _LANGUAGE.match(language) else ""
        return f"<pre{attribute}><code>{inner_html}</code></pre>"
    target = _link_target(kind, text, entity)
    if target:
        return _anchor(target, inner_html)
    opening, closing = _WRAP.get(kind, ("", ""))
    return f"{opening}{inner_html}{closing}"


def _fragments_html(fragments: Sequence[Any]) -> str | None:
    """A Telegram export's fragments ({"type", "text", "href"?, "language"?}) as HTML;
    None when they are not fragments."""
    out: list[str] = []
    budget = MAX_FORMATTED
    for fragment in fragments[: MAX_ENTITIES * 4]:
        if isinstance(fragment, str):  # a plain piece, as `text` lists hold them
            fragment = {"type": "plain", "text": fragment}
        if not isinstance(fragment, Mapping) or not isinstance(fragment.get("text"), str):
            return None
        text = fragment["text"]
        kind = str(fragment.get("type") or "plain")
        if budget <= 0:
            out.append(_plain(text))
            continue
        budget -= len(text)
        if kind == "plain":
            out.append(_plain(text))
            continue
        # Line breaks at a fragment's edges belong to the text around it, not inside a
        # code span or a bold run (an export writes "code\n\n" before a block).
        core = text.strip("\n")
        lead, trail = text[: len(text) - len(text.lstrip("\n"))], text[len(text.rstrip("\n")) :]
        if not core:
            out.append(_plain(text))
            continue
        if kind == "pre":
            inner = _plain(core, breaks=False, links=False)
        else:
            inner = _plain(core, links=kind not in ("code", "link", "text_link", "email"))
        out.append(_plain(lead) + _wrap(kind, inner, core, fragment) + _plain(trail))
    for fragment in fragments[MAX_ENTITIES * 4 :]:
        if isinstance(fragment, Mapping):
            out.append(_plain(str(fragment.get("text") or "")))
        elif isinstance(fragment, str):
            out.append(_plain(fragment))
    return "".join(out)


@dataclass(frozen=True)
class _Entity:
    kind: str
    start: int  # UTF-16 code units
    end: int
    raw: Mapping[str, Any]


def _offset_entities(text_units: int, entities: Sequence[Any]) -> list[_Entity] | None:
    found: list[_Entity] = []
    for raw in entities[:MAX_ENTITIES]:
        if not isinstance(raw, Mapping):
            return None
        offset, length = raw.get("offset"), raw.get("length")
        if not isinstance(offset, int) or not isinstance(length, int) or isinstance(offset, bool):
            return None
        start, end = max(0, offset), min(text_units, offset + max(0, length))
        if start < end:
            found.append(_Entity(str(raw.get("type") or ""), start, end, raw))
    found.sort(key=lambda e: (e.start, -e.end))
    return found


def _entities_html(text: str, entities: Sequence[Any]) -> str | None:
    """Text with Bot API entities (UTF-16 offsets, nested, never crossing) as HTML; None
    when `entities` are not such entities."""
    data = text.encode("utf-16-le", "surrogatepass")
    units = len(data) // 2
    found = _offset_entities(units, entities)
    if found is None:
        return None

    def piece(start: int, end: int) -> str:
        return data[start * 2 : end * 2].decode("utf-16-le", "replace")

    def render(start: int, end: int, inside: list[_Entity], pre: bool) -> str:
        out: list[str] = []
        position = start
        index = 0
        while index < len(inside):
            entity = inside[index]
            following = index + 1
            while following < len(inside) and inside[following].start < entity.end:
                following += 1
            # Children lie wholly inside; one that crosses the edge (bad data) is dropped.
            children = [c for c in inside[index + 1 : following] if c.end <= entity.end]
            if entity.start < position:  # overlaps what was drawn: bad data, skip it
                index = following
                continue
            out.append(_plain(piece(position, entity.start), breaks=not pre, links=not pre))
            is_pre = pre or entity.kind in ("pre", "code")
            inner = render(entity.start, entity.end, children, is_pre)
            out.append(_wrap(entity.kind, inner, piece(entity.start, entity.end), entity.raw))
            position = entity.end
            index = following
        out.append(_plain(piece(position, end), breaks=not pre, links=not pre))
        return "".join(out)

    return render(0, units, found, False)


_BLOCK_EDGE = re.compile(r"(</(?:pre|blockquote)>)<br>\n|<br>\n(<(?:pre|blockquote)[ >])")


def _blocks_joined(drawn: str) -> str:
    """The line break beside a code block or a quote is the block's own edge: drawn
    again, it would leave an empty line."""
    return _BLOCK_EDGE.sub(lambda m: m.group(1) or m.group(2), drawn)


def telegram_html(text: str, metadata: Mapping[str, Any]) -> str:
    # A bot's message keeps a photo's caption formatting as `caption_entities`.
    entities = metadata.get("entities") or metadata.get("caption_entities")
    if isinstance(entities, list) and entities:
        first = entities[0]
        if isinstance(first, Mapping) and "offset" in first:
            head, rest = _split(text)
            drawn = _entities_html(head, entities)
            if drawn is not None:
                return _blocks_joined(drawn) + _tail(rest)
        elif isinstance(first, Mapping):
            drawn = _fragments_html(entities)
            if drawn is not None:
                return _blocks_joined(drawn)
    return _plain(text)


# --- Discord: markdown -------------------------------------------------------------------------

_MENTION = re.compile(
    r"<(@!?|@&|#)(\d{1,25})>|<(a?):(\w{1,64}):\d{1,25}>|<t:(-?\d{1,13})(?::[tTdDfFR])?>"
)


def _discord_inline(state: StateInline, silent: bool) -> bool:
    """`<@id>`, `<#id>`, `<@&id>`, `<:emoji:id>` and `<t:unix>` as their names."""
    if state.src[state.pos] != "<":
        return False
    match = _MENTION.match(state.src, state.pos, min(state.posMax, state.pos + 80))
    if match is None:
        return False
    if not silent:
        names: Mapping[str, str] = state.env.get("mentions", {})
        sigil, number, _animated, emoji, unix = match.groups()
        if emoji:
            token = state.push("text", "", 0)
            token.content = f":{emoji}:"
        elif unix is not None:
            token = state.push("text", "", 0)
            try:
                token.content = datetime.fromtimestamp(int(unix), UTC).strftime("%Y-%m-%d %H:%M")
            except (OverflowError, OSError, ValueError):
                token.content = match.group(0)
        else:
            token = state.push("discord_mention", "span", 0)
            label = names.get(number, "") if sigil.startswith("@") and sigil != "@&" else ""
            if sigil == "#":
                token.content = "#" + (names.get(f"#{number}") or "channel")
            elif sigil == "@&":
                token.content = "@" + (names.get(f"&{number}") or "role")
            else:
                token.content = "@" + (label or "unknown user")
    state.pos = match.end()
    return True


def _spoiler(state: StateInline, silent: bool) -> bool:
    """`||hidden||`: a spoiler, revealed on hover or focus."""
    start = state.pos
    if not state.src.startswith("||", start):
        return False
    end = state.src.find("||", start + 2, state.posMax)
    if end < 0 or end == start + 2 or silent:
        return False
    old_max = state.posMax
    state.pos, state.posMax = start + 2, end
    state.push("spoiler_open", "span", 1)
    state.md.inline.tokenize(state)
    state.push("spoiler_close", "span", -1)
    state.pos, state.posMax = end + 2, old_max
    return True


def _linkify(state: StateCore) -> None:
    """Bare web links in text become links (not inside a link or code already)."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        inside_link = 0
        for token in block.children:
            if token.type == "link_open":
                inside_link += 1
            elif token.type == "link_close":
                inside_link = max(0, inside_link - 1)
            if token.type != "text" or inside_link or "http" not in token.content.lower():
                children.append(token)
                continue
            position = 0
            content = token.content
            for start, end in _link_spans(content):
                if start > position:
                    before = Token("text", "", 0)
                    before.content = content[position:start]
                    children.append(before)
                opening = Token("link_open", "a", 1)
                opening.attrs = {"href": content[start:end]}
                opening.markup = "linkify"
                label = Token("text", "", 0)
                label.content = content[start:end]
                children.extend([opening, label, Token("link_close", "a", -1)])
                position = end
            if position < len(content):
                rest = Token("text", "", 0)
                rest.content = content[position:]
                children.append(rest)
        block.children = children


# Render rules: (renderer, tokens, index, options, env) -> HTML.


def _strong_open(r: RendererHTML, tokens: Sequence[Token], idx: int, o: Any, env: Any) -> str:
    # Discord's `__x__` is underline; `**x**` is bold.
    return "<u>" if tokens[idx].markup == "__" else r.renderToken(tokens, idx, o, env)


def _strong_close(r: RendererHTML, tokens: Sequence[Token], idx: int, o: Any, env: Any) -> str:
    return "</u>" if tokens[idx].markup == "__" else r.renderToken(tokens, idx, o, env)


def _fence(r: RendererHTML, tokens: Sequence[Token], idx: int, o: Any, env: Any) -> str:
    token = tokens[idx]
    language = token.info.strip().split(" ", 1)[0] if token.info else ""
    attribute = f' data-language="{html.escape(language)}"' if _LANGUAGE.match(language) else ""
    code = html.escape(token.content.rstrip("\n"), quote=False)
    return f"<pre{attribute}><code>{code}</code></pre>\n"


def _link_open(r: RendererHTML, tokens: Sequence[Token], idx: int, o: Any, env: Any) -> str:
    # The title shows where a masked link really goes.
    quoted = html.escape(str(tokens[idx].attrGet("href") or ""), quote=True)
    return f'<a href="{quoted}" title="{quoted}">'


def _mention(r: RendererHTML, tokens: Sequence[Token], idx: int, o: Any, env: Any) -> str:
    return f'<span class="mention">{html.escape(tokens[idx].content, quote=False)}</span>'


def _spoiler_open(r: RendererHTML, tokens: Sequence[Token], idx: int, o: Any, env: Any) -> str:
    return '<span class="spoiler" tabindex="0">'


def _spoiler_close(r: RendererHTML, tokens: Sequence[Token], idx: int, o: Any, env: Any) -> str:
    return "</span>"


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False})
    md.enable("strikethrough")
    md.disable(["code", "lheading", "hr", "reference", "html_block", "html_inline", "image"])
    md.inline.ruler.before("autolink", "discord_inline", _discord_inline)
    md.inline.ruler.before("emphasis", "spoiler", _spoiler)
    # "|" must stop the plain-text rule for the spoiler rule to see "||" (markdown-it-py 4.3+).
    terminator: Callable[[str], None] | None = getattr(md.inline, "add_terminator_char", None)
    if terminator is not None:
        terminator("|")
    md.core.ruler.push("wirecat_linkify", _linkify)
    md.add_render_rule("strong_open", _strong_open)
    md.add_render_rule("strong_close", _strong_close)
    md.add_render_rule("fence", _fence)
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("discord_mention", _mention)
    md.add_render_rule("spoiler_open", _spoiler_open)
    md.add_render_rule("spoiler_close", _spoiler_close)
    return md


_MD = _markdown()
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


def _quoted(body: str) -> str:
    """A quoted line: Discord never nests quotes, so a ">" its text starts with is text."""
    stripped = body.lstrip()
    return "> " + ("\\" + stripped if stripped.startswith(">") else body)


def _discord_quotes(text: str) -> str:
    """Discord's quotes in CommonMark: `> ` quotes its own line only (CommonMark would
    carry the quote on to the next line), `>>> ` quotes every line after it."""
    out: list[str] = []
    fence = ""
    quoting_rest = False
    previous_quoted = False
    for line in text.split("\n"):
        marker = _FENCE.match(line)
        if fence:
            out.append(("> " if quoting_rest else "") + line)
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = ""
            continue
        if quoting_rest:
            out.append(_quoted(line))
        elif line.startswith(">>> "):
            quoting_rest = True
            out.append(_quoted(line[4:]))
        elif line.startswith("> ") or line == ">":
            out.append(_quoted(line[2:]))
            previous_quoted = True
            if marker:
                fence = marker.group(1)
            continue
        else:
            if previous_quoted and line.strip():
                out.append("")  # end the quote here, as Discord does
            out.append(line)
        if marker:
            fence = marker.group(1)
        previous_quoted = False
    return "\n".join(out)


def mention_names(metadata: Mapping[str, Any]) -> dict[str, str]:
    """User id → the name a mention shows, from the message's `mentions` (an export's
    {"id", "name", "nickname"} or the API's {"id", "username", "global_name"})."""
    names: dict[str, str] = {}
    mentions = metadata.get("mentions")
    for user in mentions[:100] if isinstance(mentions, list) else []:
        if not isinstance(user, Mapping):
            continue
        number = text_of(user.get("id"), 25)
        name = next(
            (
                text_of(user.get(key), 80)
                for key in ("nickname", "global_name", "name", "username")
                if text_of(user.get(key), 80)
            ),
            "",
        )
        if number and name:
            names[number] = name
    return names


# A character or line start that may mark something up; a text without one (most chat
# messages) is plain, and skips the parser.
_MARKS = re.compile(r"[*_~`|\[\]<>#\\&]|^\s*(?:[-+]|\d{1,9}[.)])\s", re.MULTILINE)


def markdown_html(text: str, metadata: Mapping[str, Any]) -> str:
    head, rest = _split(text)
    if not _MARKS.search(head):
        return _plain(text)
    env = {"mentions": mention_names(metadata)}
    tokens = _MD.parse(_discord_quotes(head), env)
    # markdown-it drops what lies deeper than maxNesting (quotes or lists 20 deep): such
    # a text is shown plain rather than lose words.
    if max((t.level for t in tokens), default=0) >= _MD.options["maxNesting"] - 2:
        return _plain(text)
    return _MD.renderer.render(tokens, _MD.options, env) + _tail(rest)


# --- Slack and WhatsApp: *bold* _italic_ ~strike~ -----------------------------------------------

_MRKDWN_INLINE = re.compile(
    r"(?P<code>`[^`\n]+`)"
    r"|(?P<bold>(?<![\w*])\*(?=\S)[^*\n]+?(?<=\S)\*(?![\w*]))"
    r"|(?P<italic>(?<![\w_])_(?=\S)[^_\n]+?(?<=\S)_(?![\w_]))"
    r"|(?P<strike>(?<![\w~])~(?=\S)[^~\n]+?(?<=\S)~(?![\w~]))"
)
_MRKDWN_TAGS = {"bold": "strong", "italic": "em", "strike": "s"}
_MONO = re.compile(r"```(.+?)```", re.DOTALL)


def _mrkdwn_inline(text: str, depth: int = 0) -> str:
    out: list[str] = []
    position = 0
    for match in _MRKDWN_INLINE.finditer(text):
        kind = match.lastgroup or ""
        out.append(_plain(text[position : match.start()], breaks=False))
        inner = match.group(0)[1:-1]
        if kind == "code":
            out.append(f"<code>{html.escape(inner, quote=False)}</code>")
        elif depth < 3:
            tag = _MRKDWN_TAGS[kind]
            out.append(f"<{tag}>{_mrkdwn_inline(inner, depth + 1)}</{tag}>")
        else:
            out.append(_plain(match.group(0), breaks=False))
        position = match.end()
    out.append(_plain(text[position:], breaks=False))
    return "".join(out)


def _mrkdwn_lines(text: str) -> str:
    out: list[str] = []
    quote: list[str] = []

    def flush() -> None:
        if quote:
            out.append("<blockquote>" + "<br>\n".join(quote) + "</blockquote>")
            quote.clear()

    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.startswith("> ") or line.startswith("&gt; ") or line == ">":
            quote.append(_mrkdwn_inline(line.split(" ", 1)[1] if " " in line else ""))
            continue
        flush()
        out.append(_mrkdwn_inline(line) + ("<br>\n" if index < len(lines) - 1 else ""))
    flush()
    return "".join(out)


def mrkdwn_html(text: str) -> str:
    head, rest = _split(text)
    out: list[str] = []
    position = 0
    for match in _MONO.finditer(head):
        out.append(_mrkdwn_lines(head[position : match.start()]))
        body = match.group(1)
        if "\n" in body:
            out.append(f"<pre><code>{html.escape(body.strip(chr(10)), quote=False)}</code></pre>")
        else:
            out.append(f"<code>{html.escape(body, quote=False)}</code>")
        position = match.end()
    out.append(_mrkdwn_lines(head[position:]))
    return "".join(out) + _tail(rest)


# --- the one entry ------------------------------------------------------------------------------


def message_html(text: str, *, markup: str, metadata: Any = None) -> SafeString:
    """`text` with its formatting as safe HTML, read as `markup` ("entities", "markdown",
    "mrkdwn"; anything else is plain text with clickable links)."""
    text = text or ""
    meta: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else {}
    if markup == "entities":
        drawn = telegram_html(text, meta)
    elif markup == "markdown":
        drawn = markdown_html(text, meta)
    elif markup == "mrkdwn":
        drawn = mrkdwn_html(text)
    else:
        # Plain text is escaped piece by piece by `linkify`: nothing in it is markup.
        return plain_html(text)
    return clean(drawn)
