"""Concord's management commands start without Django's URL checks (config/commands.py): started from the shell,
a command does not import the views (and with them pandas, SciPy and matplotlib) before its own work, while
`manage.py check` still runs every check; and a Celery worker starts without them too."""

from __future__ import annotations

import os
import subprocess
import sys

from django.core.management import get_commands, load_command_class

from config.commands import ConcordCommand
from tests.conftest import REPO

OURS = ("annotation", "judges", "rubrics", "config")


def test_every_command_of_ours_is_a_concord_command():
    ours = {name: app for name, app in get_commands().items() if app.split(".")[0] in OURS}
    assert len(ours) >= 18
    others = {name for name, app in ours.items() if not isinstance(load_command_class(app, name), ConcordCommand)}
    assert others == set()


def _started_from_the_shell(*argv: str) -> subprocess.CompletedProcess:
    """argv as `python manage.py ...` runs it, then which heavy modules that process had imported."""
    code = ("import sys; from django.core.management import execute_from_command_line\n"
            "try:\n    execute_from_command_line(['manage.py', *sys.argv[1:]])\n"
            "except SystemExit:\n    pass\n"
            "print('views' if 'annotation.views.manage_phases' in sys.modules else 'no views')")
    return subprocess.run([sys.executable, "-c", "import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
                           f"'config.settings'); exec({code!r})", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_a_command_started_from_the_shell_skips_the_url_checks_and_check_still_runs_them(tmp_path):
    done = _started_from_the_shell("load_judge", str(tmp_path / "missing.yaml"))
    assert "missing.yaml" in done.stderr  # the command ran, and said what was wrong
    assert done.stdout.strip().endswith("no views"), done.stdout
    checked = _started_from_the_shell("check")
    assert "System check identified no issues" in checked.stdout and checked.stdout.strip().endswith("\nviews")


def test_a_celery_worker_starts_without_the_url_checks():
    """config/celery.py: Celery's Django fixup checks as the worker starts; without CELERY_SKIP_CHECKS that
    imports every view."""
    code = ("import sys, config.celery as c; from celery.fixups.django import DjangoWorkerFixup; "
            "DjangoWorkerFixup(c.app).validate_models(); "
            "print('views' if 'annotation.views.manage_phases' in sys.modules else 'no views')")

    def start(**env):
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                              env={**{k: v for k, v in os.environ.items() if k != "CELERY_SKIP_CHECKS"}, **env})
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    assert start() == "no views"
    assert start(CELERY_SKIP_CHECKS="") == "views"  # what the checks would load


def test_a_celery_worker_loads_its_tasks_without_the_report_libraries():
    """annotation/tasks.py imports each service inside its task: the release builder brings pandas, SciPy's
    statistics and pyarrow (about 1.5 s of CPU), which a worker that never builds a release need not pay."""
    code = ("import sys, django; django.setup(); from config.celery import app; "
            "app.loader.import_default_modules(); "
            "print(sorted(m for m in ('annotation.tasks', 'judges.tasks') if m in sys.modules)); "
            "print(sorted(m for m in ('pandas', 'scipy.stats', 'matplotlib', 'pyarrow') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"})
    assert done.returncode == 0, done.stderr[-2000:]
    tasks, heavy = done.stdout.strip().splitlines()
    assert tasks == "['annotation.tasks', 'judges.tasks']"  # the tasks were loaded
    assert heavy == "[]", heavy
