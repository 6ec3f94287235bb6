"""The API's one error shape, and the types every capability's schemas share, so that the
OpenAPI schema says exactly what the server accepts and returns:

- `Id`: a row id, 1 to 2**63 - 1 (SQLite's largest integer: a larger one would overflow
  in the ORM);
- `BodyIn`: a JSON body is an object (not null, a number, a string or a list) and its
  fields are strict (no "1" for 1, no 1 for true);
- `Text`, `Choice`, `Matching`, `Format`, `Day`: strings checked by the server exactly as
  their `pattern`, `maxLength`, `enum` or `format` say, with the services' own messages;
- `At`: a date-time always with its zone (UTC when the store gave a naive one).

Every check here is written twice on purpose, once as JSON Schema (what agents and the
contract test read) and once in Python (what the server does); the docstrings say why
the two agree.
"""

from __future__ import annotations

import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from typing import Annotated, Any

import annotated_types
from ninja import Schema
from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    Strict,
    model_validator,
)
from pydantic.functional_validators import ModelWrapValidatorHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

ID_MAX = 2**63 - 1  # SQLite's largest integer


def _integral(value: Any) -> Any:
    """JSON Schema counts 12.0 as an integer (the value, not its spelling, is typed)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# annotated_types, not Field(), and before the validator: so the bounds reach the JSON Schema
# of a list's items too (a float like 12.0 is made an int first).
Id = Annotated[int, annotated_types.Interval(ge=1, le=ID_MAX), BeforeValidator(_integral)]


class ErrorOut(Schema):
    """Every error: `error` (the kind: Invalid, NotFound, Forbidden, Conflict,
    Unauthorized, RateLimited, TooLarge, …) and `detail` (what was wrong and where).
    A query syntax error adds `position`; a refused send adds `send_id` and `rule`."""

    error: str
    detail: str
    position: int | None = None
    send_id: str | None = None
    rule: str | None = None


class BodyIn(Schema):
    """A request body: a JSON object whose fields are strict. ninja's Schema would read
    any value's attributes (so `null`, `42` or `"hello"` passed as an object of defaults)
    and pydantic's lax mode would take "1" for 1 and "yes" for true, neither of which the
    OpenAPI schema allows."""

    model_config = ConfigDict(strict=True)

    @model_validator(mode="wrap")
    @classmethod
    def _run_root_validator(cls, values: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        # Replaces ninja's validator of the same name (which wraps any value in a getter).
        if not isinstance(values, dict):
            raise ValueError(f"the body must be a JSON object, not {_json_type(values)}")
        checked = handler(values)  # a field's own check names it more precisely
        broken = _half_surrogate(values)
        if broken is not None:
            raise ValueError(f"{broken}: not valid Unicode (half of a surrogate pair)")
        return checked


def _half_surrogate(value: Any, path: str = "", depth: int = 0) -> str | None:
    """Where the JSON value holds half of a surrogate pair (`"\\ud800"`, which JSON may
    write and no text encoding holds: the store could not write it), as a dotted path; None
    when it holds none."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "the body"
        return None
    if depth > 32:
        return None
    items: Any = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        if isinstance(key, str) and _half_surrogate(key) is not None:
            return f"{path}.{key!r}" if path else repr(key)
        found = _half_surrogate(item, f"{path}.{key}" if path else str(key), depth + 1)
        if found is not None:
            return found
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a string" if isinstance(value, str) else "an array"


# --- strings ------------------------------------------------------------------------------


def _class(chars: Sequence[str]) -> str:
    """A regular-expression character class body naming exactly `chars`, as ranges of
    \\uXXXX escapes (which Python, ECMA-262 and Rust regexes all read the same way)."""
    points = sorted(ord(c) for c in chars)
    ranges: list[tuple[int, int]] = []
    for point in points:
        if ranges and point == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], point)
        else:
            ranges.append((point, point))

    def escape(point: int) -> str:
        assert point <= 0xFFFF, "written as \\uXXXX: the Basic Multilingual Plane only"
        return f"\\u{point:04x}"

    return "".join(escape(lo) if lo == hi else f"{escape(lo)}-{escape(hi)}" for lo, hi in ranges)


# What str.strip() and str.split() take for whitespace (str.isspace), named one by one:
# `\s` differs between regex engines (Python's includes \x1c-\x1f, Rust's does not).
# (All of them lie in the Basic Multilingual Plane, which `_class` checks.)
SPACE = _class([chr(c) for c in range(0x10000) if chr(c).isspace()])
# Somewhere a character that is not whitespace: the services' "empty" check, as a pattern.
NOT_BLANK = f"[^{SPACE}]"


def _without_space(allowed_class: str) -> str:
    """`[^…]` (a negated class) narrowed to characters that are not spaces either."""
    assert allowed_class.startswith("[^") and allowed_class.endswith("]"), allowed_class
    return f"{allowed_class[:-1]}{SPACE}]"


def _has_text(value: str) -> bool:
    return bool(value.strip())  # exactly: some character is not in SPACE


class _Rule(ABC):
    """Annotated metadata: a check run after pydantic's own, and the JSON Schema keywords
    that say the same thing. Each kind of rule says its own check."""

    keywords: dict[str, Any]
    # A name makes the type one schema of the components, which fields refer to ($ref).
    ref: str | None = None

    @abstractmethod
    def check(self, value: str) -> str: ...

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        inner = handler(source)
        if self.ref is None:
            return core_schema.no_info_after_validator_function(self.check, inner)
        return core_schema.no_info_after_validator_function(self.check, inner, ref=self.ref)

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        found = handler(schema)
        handler.resolve_ref_schema(found).update(self.keywords)
        return found


class Text(_Rule):
    """A string: not blank unless `blank`, at most `most` characters (code points, as
    JSON Schema counts them), and when given matching `pattern`, which `allowed`
    implements in Python (refused with `refused`). Messages are the services' own."""

    def __init__(
        self,
        label: str,
        *,
        most: int | None = None,
        blank: bool = False,
        pattern: str | None = None,
        allowed: Callable[[str], bool] | None = None,
        refused: str = "",
        ref: str | None = None,
        format: str | None = None,
        description: str | None = None,
    ) -> None:
        self.label, self.most, self.blank = label, most, blank
        self.allowed, self.refused, self.ref = allowed, refused, ref
        self.keywords = {}
        if pattern is not None:
            # `pattern` says which characters may appear (a class, repeated); written once
            # more with at least one that is not a space in the middle, so that one pattern
            # says both.
            assert pattern.startswith("^[") and pattern.endswith("]*$"), pattern
            allowed_class = pattern[1:-2]
            self.keywords["pattern"] = (
                pattern
                if blank
                else f"^{allowed_class}*{_without_space(allowed_class)}{allowed_class}*$"
            )
        elif not blank:
            self.keywords["pattern"] = NOT_BLANK
        if most is not None:
            self.keywords["maxLength"] = most
        if format is not None:
            self.keywords["format"] = format
        if description is not None:
            self.keywords["description"] = description

    def check(self, value: str) -> str:
        if not self.blank and not _has_text(value):
            raise ValueError(f"{self.label}: empty")
        if self.most is not None and len(value) > self.most:
            raise ValueError(f"{self.label}: at most {self.most:,} characters")
        if self.allowed is not None and not self.allowed(value):
            raise ValueError(f"{self.label}: {self.refused}")
        return value


class Matching(_Rule):
    """A string the whole of which matches `regex` (ASCII classes only, so that every
    engine reads it alike), refused with the service's message otherwise."""

    def __init__(self, label: str, regex: str, refused: str) -> None:
        self.label, self.regex, self.refused = label, re.compile(regex), refused
        self.keywords = {"pattern": f"^(?:{regex})$"}

    def check(self, value: str) -> str:
        if not self.regex.fullmatch(value):
            raise ValueError(f"{self.label}: {self.refused}")
        return value


class Choice(_Rule):
    """One of `values` (an `enum` in the schema), refused with the services' message."""

    def __init__(self, label: str, values: Sequence[str]) -> None:
        self.label, self.values = label, tuple(values)
        self.keywords = {"enum": list(self.values)}

    def check(self, value: str) -> str:
        if value not in self.values:
            named = ", ".join(v or '""' for v in self.values)
            raise ValueError(f"{self.label}: one of {named}")
        return value


class Format(_Rule):
    """A string in a format only the server makes or reads (a cursor it gave out, the
    query language): `format` names it, and the server refuses anything else with 422
    (the operation's description says which format)."""

    def __init__(self, name: str, *, most: int | None = None) -> None:
        self.most = most
        self.keywords = {"format": name}
        if most is not None:
            self.keywords["maxLength"] = most

    def check(self, value: str) -> str:
        if self.most is not None and len(value) > self.most:
            raise ValueError(f"at most {self.most:,} characters")
        return value


def _iso_day(value: Any) -> Any:
    if isinstance(value, date):  # set by Python code, not read from JSON
        return value
    if not isinstance(value, str) or not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        raise ValueError("a date like 2026-12-24")
    return value


# A calendar day written YYYY-MM-DD (JSON Schema's `date`), nothing else: pydantic alone
# would also take a number of seconds, or a date and a time of zero.
Day = Annotated[date, Strict(False), BeforeValidator(_iso_day)]


# --- tag names ----------------------------------------------------------------------------

TAG_NAME_MAX = 64


def _tag_name_allowed(value: str) -> bool:
    return '"' not in value and not any(unicodedata.category(c).startswith("C") for c in value)


# A tag name must be writable as tag:"…" in a query: no " and no character of Unicode's
# category C (control, format, private use, unassigned). The schema says it as `\p{C}`,
# which Rust's and ECMA-262's (`u`) regexes read from their own Unicode tables: a character
# assigned after the server's Python (its `unicodedata`) is still refused here.
TagName = Annotated[
    str,
    Text(
        "tag name",
        most=TAG_NAME_MAX,
        pattern='^[^\\p{C}"]*$',
        allowed=_tag_name_allowed,
        refused='no " or control characters',
        ref="TagName",
        format="wirecat-tag-name",
        description='1 to 64 characters (spaces collapsed), no " or control characters',
    ),
]


# --- answers ------------------------------------------------------------------------------


def _zoned(value: datetime) -> datetime:
    """The store keeps UTC; a value read by raw SQL or an aggregate comes back naive."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


# A date-time with its zone (RFC 3339), as `format: date-time` requires.
At = Annotated[datetime, AfterValidator(_zoned)]
