"""The base of Concord's management commands.

Django runs every system check before a command started from the shell (`requires_system_checks = "__all__"`),
and the URL checks import every view, and with them pandas, SciPy and matplotlib: 2.3 s of CPU before a command
that needs none of it (2026-11-29, 2-core python-svc machine: a command that stops at once took 3.0 s, 0.6 s
without the checks). Concord's commands run the model checks alone; `manage.py check` still runs them all, and
the server and the worker load the views when they start."""

from __future__ import annotations

from django.core.checks import Tags
from django.core.management.base import BaseCommand


class ConcordCommand(BaseCommand):
    requires_system_checks = [Tags.models]
