#!/usr/bin/env python
"""Django's command-line entry point. platform/ is a source root, put first on sys.path."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def main() -> None:
    # platform/ first (config, apps), then the repository root (grader).
    for path in (str(ROOT), str(ROOT / "platform")):
        while path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
