"""Domain errors raised by services and selectors. api.exceptions maps them to HTTP."""

from __future__ import annotations

from collections.abc import Mapping


class DomainError(Exception):
    """Base of every rule the domain enforces; never shows a stack trace to a user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(DomainError):
    """Bad input, per field: {"code": ["Code must not be empty."]} -> HTTP 400."""

    def __init__(self, errors: Mapping[str, str | list[str]]) -> None:
        self.errors = {k: [v] if isinstance(v, str) else list(v) for k, v in errors.items()}
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in self.errors.items()))


class NotFound(DomainError):
    """The object does not exist or the caller may not see it (both -> HTTP 404)."""


class Forbidden(DomainError):
    """The object is known to exist but the caller may not act on it (-> HTTP 403)."""


class Conflict(DomainError):
    """The request contradicts the current state (-> HTTP 409)."""


class RateLimited(DomainError):
    """Too many requests in a short time (-> HTTP 429 with Retry-After)."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after
