"""Per-user limits over a sliding window, counted in the database (rows the user made)."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from common.errors import RateLimited


def window_check(rows: QuerySet[Any], *, limit: int, window_s: int, what: str) -> None:
    """Raises RateLimited (with Retry-After) when `rows`, the user's rows that count, hold
    `limit` with a `created_at` inside the last `window_s` seconds already."""
    now = timezone.now()
    recent = rows.filter(created_at__gt=now - timedelta(seconds=window_s))
    if recent.count() < limit:
        return
    oldest = recent.order_by("created_at").values_list("created_at", flat=True).first()
    assert oldest is not None
    retry_after = max(1, math.ceil((oldest + timedelta(seconds=window_s) - now).total_seconds()))
    raise RateLimited(
        f"Too many {what}: at most {limit} per {window_s} s. Try again in {retry_after} s.",
        retry_after=retry_after,
    )
