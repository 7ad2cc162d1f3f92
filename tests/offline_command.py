"""Run a management command that needs no database, as a user would: a fresh process with no
DATABASE_URL or REDIS_URL in its environment (run_offline), or manage.py's own entry inside the test
process (run_in_process).

A fresh process costs about 2 s of CPU (Django, pandas, SciPy's statistics: `comparisons` on a two-line
file, 2026-12-07), so each command's tests start one to show that it runs without a database, and the rest
(its figures, its messages for bad files) run in the test process, which pytest-django keeps off the
database as well: a test not marked for it fails at the first query."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_offline(command: str, tmp_path: Path, text: str, *args: str, name: str = "input.csv"):
    path = tmp_path / name
    path.write_text(text)
    return subprocess.run([sys.executable, "manage.py", command, str(path), *args], cwd=REPO, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "SECRET_KEY": "x"})


def run_in_process(command: str, tmp_path: Path, text: str, *args: str, name: str = "input.csv"):
    """What run_offline returns (exit status, standard output and error), from manage.py's ManagementUtility
    in this process: the same parsing of the command line, and a CommandError written and turned into the
    exit status as manage.py does."""
    from django.core.management import ManagementUtility

    path = tmp_path / name
    path.write_text(text)
    argv = ["manage.py", command, str(path), *args]
    out, err, status = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ManagementUtility(argv).execute()
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())
