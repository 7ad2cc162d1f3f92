"""Run a management command that needs no database, as a user would: a fresh process with no
DATABASE_URL or REDIS_URL in its environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_offline(command: str, tmp_path: Path, text: str, *args: str, name: str = "input.csv"):
    path = tmp_path / name
    path.write_text(text)
    return subprocess.run([sys.executable, "manage.py", command, str(path), *args], cwd=REPO, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "SECRET_KEY": "x"})
