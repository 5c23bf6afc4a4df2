"""`Authorization: Bearer <course token>`. Sits beside DRF's per-user `Token` scheme: a
header with another keyword is left to the other classes."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from integrations.tokens import CourseGrant, InvalidToken, course_grant, course_token_check

KEYWORD = "Bearer"


class CourseTokenAuthentication(BaseAuthentication):
    """request.user is the token's creator; request.auth is a CourseGrant (course, scopes)
    that integrations.permissions.CourseTokenScope enforces on every view."""

    def authenticate(self, request: Request) -> tuple[Any, CourseGrant] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].decode("latin-1").lower() != KEYWORD.lower():
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                "Invalid Authorization header: use 'Bearer <token>' (no spaces in the token)."
            )
        try:
            secret = parts[1].decode("ascii")
            token = course_token_check(secret)
        except (UnicodeDecodeError, InvalidToken) as error:
            message = str(error) if isinstance(error, InvalidToken) else "Invalid token."
            raise exceptions.AuthenticationFailed(message) from None
        return token.created_by, course_grant(token)

    def authenticate_header(self, request: Request) -> str:
        return f'{KEYWORD} realm="api"'
