"""gunicorn, wherever it serves Concord, reads the project's gunicorn.conf.py and forks its workers from a master
that has imported every view (a launch's first seconds are as fast as the rest: bench annotator_loop_1000 reports
them on their own)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


# The longest a balancer in front keeps an idle connection to a node: HAProxy purges idle server connections
# within pool-purge-delay (5 s), nginx closes them after its upstream keepalive_timeout (60 s).
BALANCER_IDLE_S = 60


def test_gunicorn_started_in_the_checkout_preloads_the_app_and_outlasts_the_balancers_idle_connections():
    printed = subprocess.run([sys.executable, "-m", "gunicorn", "--print-config", "config.wsgi:application"],
                             cwd=REPO, capture_output=True, text=True, timeout=60, check=True).stdout
    settings = {k.strip(): v.strip() for k, _, v in (line.partition("=") for line in printed.splitlines())}
    assert settings["config"] == "./gunicorn.conf.py"
    assert settings["preload_app"] == "True"
    # gunicorn closing first races the balancer's next request on that connection (gunicorn.conf.py says how)
    assert int(settings["keepalive"]) > BALANCER_IDLE_S


def test_the_wsgi_module_loads_every_view_when_imported():
    """What a worker forked from the preloaded master has already imported: the URLconf and the views' libraries
    (which the views themselves import only when they compute: tests/foundation/test_startup_imports.py)."""
    code = ("import sys, config.wsgi; print(' '.join(m for m in ('config.urls', 'annotation.views', 'pandas', 'scipy',"
            " 'matplotlib', 'pyarrow') if m in sys.modules))")
    env = {"DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": "x" * 50, "PATH": "/usr/bin:/bin"}
    loaded = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                            env=env, check=True).stdout.split()
    assert loaded == ["config.urls", "annotation.views", "pandas", "scipy", "matplotlib", "pyarrow"]
