"""Template helpers for the page frame."""

from __future__ import annotations

from typing import Any

from django import template

from courses.access import modules_taught_by

register = template.Library()


@register.simple_tag(takes_context=True)
def teaching_modules(context: dict[str, Any]) -> list[Any]:
    """The modules the signed-in user teaches (for the header's "Teach" links)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return []
    return list(modules_taught_by(user=user))
