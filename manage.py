#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from config.unset_db.base import DatabaseUrlMissing

    try:
        execute_from_command_line(sys.argv)
    except DatabaseUrlMissing as exc:  # a setup step, not a bug: no traceback
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
