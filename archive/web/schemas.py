"""The API's one error shape."""

from __future__ import annotations

from ninja import Schema


class ErrorOut(Schema):
    """Every error: `error` (the kind: Invalid, NotFound, Forbidden, Conflict,
    Unauthorized, RateLimited, TooLarge, …) and `detail` (what was wrong and where).
    A query syntax error adds `position`; a refused send adds `send_id` and `rule`."""

    error: str
    detail: str
    position: int | None = None
    send_id: str | None = None
    rule: str | None = None
