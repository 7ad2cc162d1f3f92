"""`make test` and `make bench` (config/launcher.py) start their Python processes with bytecode kept: where
PYTHONDONTWRITEBYTECODE is set, each server, worker and command the suite starts compiled every module of ours
it imported again (0.7-1.2 s of CPU a start)."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import config.launcher as launcher


def test_the_suite_and_the_benches_start_their_processes_with_bytecode_kept(monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("CONCORD_TESTING", os.environ.get("CONCORD_TESTING", "1"))  # _test sets it; restored after
    started, real_run = [], subprocess.run

    def run(argv, **kwargs):
        # What a child of the launcher is started with: the environment as it stands at the call.
        child = real_run([sys.executable, "-c", "import sys; print(sys.dont_write_bytecode)"],
                               capture_output=True, text=True, check=True)
        started.append((argv[2], child.stdout.strip()))
        return SimpleNamespace(returncode=0)

    monkeypatch.setattr(launcher.subprocess, "run", run)
    assert launcher._test(["-q"]) == 0 and launcher._bench(["loop"]) == 0
    assert started == [("pytest", "False"), ("bench", "False")]


def test_a_process_started_with_the_variable_writes_no_bytecode(tmp_path):
    """The other side: what the launcher undoes is real (a module imported under the variable leaves no .pyc)."""
    (tmp_path / "probe_module.py").write_text("X = 1\n")
    for env, expected in (({"PYTHONDONTWRITEBYTECODE": "1"}, []), ({}, ["probe_module"])):
        base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
        subprocess.run([sys.executable, "-c", "import probe_module"], cwd=tmp_path, env={**base, **env}, check=True)
        assert sorted(p.name.split(".")[0] for p in tmp_path.glob("__pycache__/*.pyc")) == expected
