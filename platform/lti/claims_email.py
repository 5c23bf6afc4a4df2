"""An e-mail address from an LMS (the id_token's `email` claim, an NRPS member's `email`)
is stored only when it is one: Django's EmailValidator's rules, at most 254 characters, and
no character a spreadsheet or a mail header would act on (control characters such as CR,
LF and TAB; a leading `=`, `+`, `-` or `@`). Anything else is dropped, the user is still
created: the address is optional, and a bad one must not reach grades.csv or a mail."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator

MAX_LENGTH = 254
FORMULA_STARTS = ("=", "+", "-", "@")
_validate = EmailValidator()


def email_or_blank(value: object) -> str:
    """`value` when it is a plain, valid e-mail address, else ""."""
    if not isinstance(value, str) or not value or len(value) > MAX_LENGTH:
        return ""
    if value.startswith(FORMULA_STARTS) or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return ""
    try:
        _validate(value)
    except ValidationError:
        return ""
    return value
