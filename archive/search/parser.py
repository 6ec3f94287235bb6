"""The search query language: one parser for the page, the API and the shell.

    words  "exact phrases"  prefix*  *infix*  -excluded  a OR b  (grouping)
    from:NAME  in:CHAT  chat:CHAT  source:PROVIDER  before:DATE  after:DATE  on:DATE
    has:attachment|link|file|voice|image|text
    is:dm|group|channel|reply|edited|deleted|mine|estimated|needs_text
    exact:WORD  filename:TEXT  tag:NAME  content:WORDS  transcript:WORDS  conv:CNV_ID

Terms are ANDed. A term holding punctuation (a URL, `sess.opts`, a file name) matches as a
substring. A field value may be quoted (`from:"Ann Lee"`). Dates are ISO (`2024`,
`2024-05`, `2024-05-01`), `today`, `yesterday` or an age (`7d`, `2w`, `3m`, `1y`).

`parse` returns a tree of `Term`, `Filter` and `Group` nodes, or raises `QuerySyntaxError`
naming the problem and its position; it raises nothing else, whatever the input. `to_json`
gives the tree in the form agents can build themselves (operator, operand, negated).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from wirecat.db.values import without_surrogates
from wirecat.errors import Invalid

MAX_QUERY_CHARS = 2_000
MAX_NODES = 64
MAX_DEPTH = 16

FIELDS = {
    "from": "from",
    "in": "chat",
    "chat": "chat",
    "source": "source",
    "before": "before",
    "after": "after",
    "on": "on",
    "has": "has",
    "is": "is",
    "exact": "exact",
    "filename": "filename",
    "tag": "tag",
    "content": "content",
    "transcript": "transcript",
    "conv": "conv",
}
HAS_VALUES = ("attachment", "link", "file", "voice", "image", "text")
IS_VALUES = (
    "dm",
    "group",
    "channel",
    "reply",
    "edited",
    "deleted",
    "mine",
    "estimated",
    "needs_text",
)
# Operators over the text of a message's files: a word, prefix* or "phrase" of that text.
FILE_TEXT_FIELDS = ("content", "transcript")
DATE_FIELDS = ("before", "after", "on")
DATE_VALUE = re.compile(r"^(?:\d{4}(?:-\d{2}(?:-\d{2})?)?|today|yesterday|\d{1,4}[dwmy])$")
# A conversation's id after `cnv_`: its first message's ULID (Crockford's base 32).
CONVERSATION_SUFFIX = re.compile(r"^[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}$")
# A word the words index holds as one token: letters, digits, marks, underscore.
WORD = re.compile(r"^\w+$")
_LETTER = re.compile(r"\w")
_SPACE = re.compile(r"[\s\x00-\x1f\x7f]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class QuerySyntaxError(Invalid):
    """The query cannot be read; `position` is the 0-based character offset."""

    def __init__(self, message: str, position: int) -> None:
        self.position = position
        self.problem = message
        super().__init__(f"{message} (at character {position + 1})")


@dataclass(frozen=True)
class Term:
    kind: str  # word | phrase | prefix | infix | substring
    text: str
    negated: bool = False
    exact: bool = False  # exact: — the form as written, never a stem


@dataclass(frozen=True)
class Filter:
    # from | chat | source | before | after | on | has | is | filename | tag | content |
    # transcript | conv
    name: str
    value: str
    negated: bool = False
    # The value was quoted: `from:"Ann Lee"` is that whole name exactly, `from:ann` any
    # sender with a word starting so; `content:"a phrase"` is those words in that order,
    # never their stems (only `from:`, `content:` and `transcript:` tell the two apart).
    exact: bool = False


@dataclass(frozen=True)
class Group:
    op: str  # and | or
    items: tuple[Node, ...]
    negated: bool = False


Node = Term | Filter | Group


def to_json(node: Node | None) -> dict[str, Any] | None:
    """The tree as plain JSON: {"operator", "operand" | "operands", "negated"}."""
    if node is None:
        return None
    if isinstance(node, Group):
        return {
            "operator": node.op,
            "operands": [to_json(item) for item in node.items],
            "negated": node.negated,
        }
    if isinstance(node, Filter):
        found = {"operator": node.name, "operand": node.value, "negated": node.negated}
        return {**found, "exact": True} if node.exact else found
    operator = "exact" if node.exact else node.kind
    return {"operator": operator, "operand": node.text, "negated": node.negated}


@dataclass(frozen=True)
class _Token:
    kind: str  # lparen | rparen | or | and | neg | phrase | bare | field
    text: str
    position: int
    name: str = ""  # a field's name
    quoted: bool = False  # a field's value was quoted


def _tokens(query: str) -> list[_Token]:
    found: list[_Token] = []
    index, end = 0, len(query)
    while index < end:
        char = query[index]
        if _SPACE.match(char):
            index += 1
        elif char in "()":
            found.append(_Token("lparen" if char == "(" else "rparen", char, index))
            index += 1
        elif char == "-" and index + 1 < end and not _SPACE.match(query[index + 1]):
            found.append(_Token("neg", char, index))
            index += 1
        elif char == '"':
            closing = query.find('"', index + 1)
            if closing < 0:
                raise QuerySyntaxError('a quoted phrase has no closing "', index)
            found.append(_Token("phrase", query[index + 1 : closing], index))
            index = closing + 1
        else:
            start = index
            while index < end and not _SPACE.match(query[index]) and query[index] not in '()"':
                index += 1
            text = query[start:index]
            name, colon, value = text.partition(":")
            field = FIELDS.get(name.lower()) if colon else None
            quoted = field is not None and not value and index < end and query[index] == '"'
            if quoted:
                closing = query.find('"', index + 1)
                if closing < 0:
                    raise QuerySyntaxError('a quoted value has no closing "', index)
                value = query[index + 1 : closing]
                index = closing + 1
                if not value.strip():
                    raise QuerySyntaxError(f"{name}: needs a value", start)
            if field is not None:
                found.append(_Token("field", value, start, name=field, quoted=quoted))
            elif text == "OR":
                found.append(_Token("or", text, start))
            elif text == "AND":
                found.append(_Token("and", text, start))
            elif text == "-":
                raise QuerySyntaxError("a lone - excludes nothing", start)
            else:
                found.append(_Token("bare", text, start))
    return found


class _Parser:
    def __init__(self, tokens: list[_Token], length: int) -> None:
        self.tokens = tokens
        self.at = 0
        self.length = length
        self.nodes = 0
        self.depth = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def where(self) -> int:
        token = self.peek()
        return token.position if token else self.length

    def parse(self) -> Node | None:
        if not self.tokens:
            return None
        node = self.or_expr()
        token = self.peek()
        if token is not None:
            raise QuerySyntaxError("this ) closes nothing", token.position)
        return node

    def or_expr(self) -> Node:
        items = [self.and_expr()]
        while (token := self.peek()) is not None and token.kind == "or":
            self.take()
            if self.peek() is None or self.peek().kind in ("rparen", "or"):  # type: ignore[union-attr]
                raise QuerySyntaxError("OR needs something after it", token.position)
            items.append(self.and_expr())
        return items[0] if len(items) == 1 else Group("or", tuple(items))

    def and_expr(self) -> Node:
        items: list[Node] = []
        while (token := self.peek()) is not None and token.kind not in ("rparen", "or"):
            if token.kind == "and":
                self.take()
                if not items:
                    raise QuerySyntaxError("AND needs something before it", token.position)
                continue
            items.append(self.unary())
        if not items:
            token = self.peek()
            if token is not None and token.kind == "or":
                raise QuerySyntaxError("OR needs something before it", token.position)
            raise QuerySyntaxError("expected a term here", self.where())
        return items[0] if len(items) == 1 else Group("and", tuple(items))

    def unary(self) -> Node:
        token = self.peek()
        if token is not None and token.kind == "neg":
            self.take()
            following = self.peek()
            if following is None or following.kind in ("rparen", "or", "and", "neg"):
                raise QuerySyntaxError("- must come right before what it excludes", token.position)
            return _negate(self.primary())
        return self.primary()

    def primary(self) -> Node:
        token = self.take()
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise QuerySyntaxError(f"a query holds at most {MAX_NODES} terms", token.position)
        if token.kind == "lparen":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise QuerySyntaxError(f"parentheses nest at most {MAX_DEPTH} deep", token.position)
            following = self.peek()
            if following is None:
                raise QuerySyntaxError("this ( is never closed", token.position)
            if following.kind == "rparen":
                raise QuerySyntaxError("empty parentheses", token.position)
            node = self.or_expr()
            closing = self.peek()
            if closing is None or closing.kind != "rparen":
                raise QuerySyntaxError("this ( is never closed", token.position)
            self.take()
            self.depth -= 1
            return node
        if token.kind == "rparen":
            raise QuerySyntaxError("this ) closes nothing", token.position)
        if token.kind == "phrase":
            return _phrase(token)
        if token.kind == "field":
            return _field(token)
        return _bare(token)


def _negate(node: Node) -> Node:
    if isinstance(node, Term):
        return Term(node.kind, node.text, not node.negated, node.exact)
    if isinstance(node, Filter):
        return Filter(node.name, node.value, not node.negated, node.exact)
    return Group(node.op, node.items, not node.negated)


def _phrase(token: _Token) -> Term:
    text = " ".join(token.text.split())
    if not text:
        raise QuerySyntaxError("an empty phrase matches nothing", token.position)
    return Term("phrase", text)


def _bare(token: _Token) -> Term:
    text = token.text
    if text.startswith("*") and text.endswith("*") and len(text) > 1:
        inner = text.strip("*")
        if not inner:
            raise QuerySyntaxError("* needs letters beside it", token.position)
        return Term("infix", inner)
    if text.startswith("*"):
        inner = text.lstrip("*")
        if not inner:
            raise QuerySyntaxError("* needs letters beside it", token.position)
        return Term("infix", inner)
    if text.endswith("*"):
        inner = text.rstrip("*")
        if not inner:
            raise QuerySyntaxError("* needs letters beside it", token.position)
        if WORD.match(inner):
            return Term("prefix", inner)
        return Term("substring", inner)
    if WORD.match(text):
        return Term("word", text)
    return Term("substring", text)


def _field(token: _Token) -> Node:
    name, value = token.name, token.text.strip()
    if not value:
        raise QuerySyntaxError(f"{name}: needs a value", token.position)
    if name == "exact":
        if WORD.match(value):
            return Term("word", value, exact=True)
        return Term("phrase", " ".join(value.split()), exact=True)
    lowered = value.lower()
    if name == "has" and lowered not in HAS_VALUES:
        raise QuerySyntaxError(f"has: takes {', '.join(HAS_VALUES)}", token.position)
    if name == "is" and lowered not in IS_VALUES:
        raise QuerySyntaxError(f"is: takes {', '.join(IS_VALUES)}", token.position)
    if name in DATE_FIELDS:
        if not DATE_VALUE.match(lowered):
            raise QuerySyntaxError(
                f"{name}: takes a date (2024-05-01, 2024-05, 2024, today, yesterday, 7d, 2m)",
                token.position,
            )
        value = lowered
    if name in ("has", "is", "source"):
        value = lowered
    if name in FILE_TEXT_FIELDS and not _LETTER.search(value):
        raise QuerySyntaxError(f"{name}: needs a word of the file's text", token.position)
    if name == "conv":
        value = _conversation_id(value, token.position)
    exact = name in ("from", *FILE_TEXT_FIELDS) and token.quoted
    return Filter(name, value, exact=exact)


def _conversation_id(value: str, position: int) -> str:
    """A `conv:` value as the store writes it: `cnv_` and the first message's ULID (its
    letters in capitals, as ids are made)."""
    prefix, _, suffix = value.partition("_")
    if prefix.lower() != "cnv" or not CONVERSATION_SUFFIX.match(suffix):
        raise QuerySyntaxError(
            "conv: takes a conversation's id, cnv_ and 26 letters and digits"
            " (the Conversations view and the API give it)",
            position,
        )
    return f"cnv_{suffix.upper()}"


def parse(query: str) -> Node | None:
    """The query as a tree (None when it holds no term); QuerySyntaxError otherwise."""
    if len(query) > MAX_QUERY_CHARS:
        raise QuerySyntaxError(
            f"the query is longer than {MAX_QUERY_CHARS} characters", MAX_QUERY_CHARS
        )
    # Control characters (NUL ends a string for SQLite) are spaces, inside quotes too.
    query = _CONTROL.sub(" ", without_surrogates(query))
    return _Parser(_tokens(query), len(query)).parse()
