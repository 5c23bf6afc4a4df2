"""JSON in and out of /api/v1/ that holds only valid Unicode text within a depth: a body
nested too deeply or holding a lone surrogate ('\\ud800', which no UTF-8 page or database
row can hold) is a 400 naming the field; stored text that holds one is shown as U+FFFD."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework import exceptions, renderers
from rest_framework.parsers import JSONParser

from common.text import first_problem, scrub

MAX_JSON_DEPTH = 32  # no request shape of the API nests beyond 4
NON_FIELD = "non_field_errors"


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, with the nesting depth bounded and lone surrogates refused."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise _refused(NON_FIELD, f"Nested deeper than {MAX_JSON_DEPTH} levels.") from None
        problem = first_problem(data, MAX_JSON_DEPTH)
        if problem is not None:
            path, message = problem
            raise _refused(path or NON_FIELD, message)
        return data


def _refused(field: str, message: str) -> exceptions.ValidationError:
    return exceptions.ValidationError({field: [message]})


class TextSafeJSONRenderer(renderers.JSONRenderer):
    """DRF's JSON renderer: data that holds a lone surrogate (a row written before input
    was checked) is rendered with U+FFFD in its place instead of failing to encode."""

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        try:
            return bytes(super().render(data, accepted_media_type, renderer_context))
        except UnicodeEncodeError:
            return bytes(super().render(scrub(data), accepted_media_type, renderer_context))


__all__ = ["MAX_JSON_DEPTH", "BoundedJSONParser", "TextSafeJSONRenderer"]
