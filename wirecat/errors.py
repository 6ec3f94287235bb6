"""The small tree of domain errors. Pages map them to messages and the API to HTTP, once."""

from __future__ import annotations


class WireCatError(Exception):
    """Base of every error a service raises on purpose. `str()` is shown to the user."""

    http_status = 400


class Invalid(WireCatError):
    http_status = 422


class NotFound(WireCatError):
    http_status = 404


class Forbidden(WireCatError):
    http_status = 403


class Conflict(WireCatError):
    http_status = 409


class RateLimited(WireCatError):
    """Too many requests; `retry_after` seconds until the next is accepted."""

    http_status = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TooLarge(WireCatError):
    http_status = 413
