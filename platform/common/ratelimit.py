"""Per-user limits over a sliding window, counted in the database (rows the user made)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from django.db.models import QuerySet

from common.errors import RateLimited


def window_check(
    recent: QuerySet[Any], *, limit: int, window_s: int, now: datetime, what: str
) -> None:
    """Raises RateLimited (with Retry-After) when `recent`, the user's rows with a
    `created_at` inside the last `window_s` seconds, already holds `limit` of them."""
    if recent.count() < limit:
        return
    oldest = recent.order_by("created_at").values_list("created_at", flat=True).first()
    assert oldest is not None
    retry_after = max(1, math.ceil((oldest + timedelta(seconds=window_s) - now).total_seconds()))
    raise RateLimited(
        f"Too many {what}: at most {limit} per {window_s} s. Try again in {retry_after} s.",
        retry_after=retry_after,
    )


def since(now: datetime, window_s: int) -> datetime:
    return now - timedelta(seconds=window_s)
