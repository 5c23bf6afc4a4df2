"""Typed readers for the environment: the only place settings come from.

`env_secret("X")` also reads the file named by `X_FILE` (Docker/Kubernetes secrets).
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def env_str(name: str, default: str = "") -> str:
    """The variable's value; unset or empty gives the default."""
    return os.environ.get(name) or default


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r}: expected one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected an integer") from None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r}: expected a number") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_secret(name: str) -> str:
    """The value of `name`, else the content of the file named by `name_FILE`, else ""."""
    value = os.environ.get(name, "")
    if value:
        return value
    path = os.environ.get(f"{name}_FILE", "")
    if not path:
        return ""
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ImproperlyConfigured(f"{name}_FILE={path!r}: cannot read it ({exc})") from None


def require_secret_key(*, debug: bool, key: str) -> str:
    """SECRET_KEY is mandatory whenever DEBUG is off: fail at start with a clear message."""
    if key:
        return key
    if debug:
        return ""
    raise ImproperlyConfigured(
        "SECRET_KEY is not set and DEBUG is off: set SECRET_KEY (or SECRET_KEY_FILE, a file "
        "holding it) in the environment, e.g. SECRET_KEY=$(python -c 'import secrets; "
        "print(secrets.token_urlsafe(50))')"
    )
