"""A process that loads the URL conf, or a Celery worker's tasks, imports none of the numeric libraries:
the views and services that need pandas, SciPy, matplotlib, pyarrow or numpy import them inside the
functions that compute (they cost 2-3 s of CPU at every web worker's, worker's and command's start)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

HEAVY = ("pandas", "scipy", "matplotlib", "pyarrow", "numpy", "sklearn")

URL_CONF = "from django.urls import get_resolver, resolve; get_resolver().reverse_dict; resolve('/')"
TASKS = "from config.celery import app; app.loader.import_default_modules()"


def _imported_by(code: str) -> list[str]:
    """The modules a fresh process has imported after django.setup() and `code`."""
    program = ("import json, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')\n"
               f"import django; django.setup(); {code}\nprint(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code, loads", [
    (URL_CONF, ("annotation.reports.views", "annotation.datasets.views", "judges.views", "annotation.api_data")),
    (TASKS, ("annotation.tasks", "judges.tasks")),
], ids=["url-conf", "celery-tasks"])
def test_starting_imports_no_numeric_library(code, loads):
    modules = _imported_by(code)
    assert set(loads) <= set(modules)  # the views (or tasks) were imported: the check below means something
    assert [m for m in modules if m.split(".")[0] in HEAVY] == []


def test_an_export_still_finds_its_formatter():
    """FORMATS names formatters that annotation.datasets.formatters imports on the first export."""
    from annotation.datasets import FORMATS, formatters

    assert all(callable(getattr(formatters, f.formatter.__name__)) for f in FORMATS.values())
