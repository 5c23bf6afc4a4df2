"""The one place domain and framework errors become HTTP. Bad input is always a 400 whose
body names the field: {"code": ["Code must not be empty."]}; other errors are
{"detail": "..."}. A learner never sees a stack trace."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from common.errors import Conflict, DomainError, Forbidden, InvalidInput, NotFound, RateLimited

logger = logging.getLogger(__name__)

NON_FIELD = "non_field_errors"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        return _domain(exc)
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return _bad_request(
            "content_type",
            f"{exc.detail!s} Send a JSON body with Content-Type: application/json.",
        )
    if isinstance(exc, exceptions.ParseError):
        return _bad_request(NON_FIELD, f"Malformed JSON body: {exc.detail!s}")
    if isinstance(exc, RequestDataTooBig):
        return _bad_request(NON_FIELD, "The request body is too large.")
    response = drf_exception_handler(exc, context)
    if response is not None:
        return response
    logger.exception("unhandled error in %s", context.get("view"), exc_info=exc)
    return Response(
        {"detail": "Internal error: it has been logged."},
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


def _domain(exc: DomainError) -> Response:
    if isinstance(exc, InvalidInput):
        return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, NotFound):
        return Response({"detail": exc.message}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, Forbidden):
        return Response({"detail": exc.message}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, Conflict):
        return Response({"detail": exc.message}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, RateLimited):
        return Response(
            {"detail": exc.message},
            status=status.HTTP_429_TOO_MANY_REQUESTS,
            headers={"Retry-After": str(exc.retry_after)},
        )
    return Response({"detail": exc.message}, status=status.HTTP_400_BAD_REQUEST)


def _bad_request(field: str, message: str) -> Response:
    return Response({field: [message]}, status=status.HTTP_400_BAD_REQUEST)
