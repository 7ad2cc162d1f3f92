"""llama.cpp's own server on a tiny random model (judges/llamacpp.py), started once for the package,
and a wiretap in front of it per test that records what the server answered."""
from __future__ import annotations

import importlib
import os
import time
from pathlib import Path

import pytest

from judges.llamacpp import running_llamacpp_server
from tests.judges_platform.conftest import make_judge, media_root  # noqa: F401 (fixtures shared with the platform tests)

from .wiretap import wiretap


DATA = Path(os.environ.get("CONCORD_DATA_DIR") or Path(__file__).resolve().parents[2] / ".data")
BUILD_WAIT_S = 1800  # llama.cpp's compile took about 10 minutes on 2 cores with the suite beside it


def wait_for_llamacpp_build() -> None:
    """Wait for scripts/ensure-llamacpp.sh's background build where one is under way; fail with its log
    where it failed. Nothing to wait for when llama_cpp was installed before this run."""
    pid_file, rc_file = DATA / "llamacpp-build.pid", DATA / "llamacpp-build.rc"
    if not pid_file.exists():
        return
    deadline = time.monotonic() + BUILD_WAIT_S
    while not rc_file.exists():
        try:
            os.kill(int(pid_file.read_text()), 0)
        except (ValueError, ProcessLookupError):
            break  # an earlier run's build, gone without a word: the import below says whether it landed
        if time.monotonic() > deadline:
            pytest.fail(f"llama.cpp's background build still running after {BUILD_WAIT_S} s")
        time.sleep(2)
    if rc_file.exists() and rc_file.read_text().strip() != "0":
        log = (DATA / "llamacpp-build.log").read_text(errors="replace")[-3000:]
        pytest.fail(f"llama.cpp's background build failed (scripts/ensure-llamacpp.sh):\n{log}")
    importlib.invalidate_caches()


@pytest.fixture(scope="session")
def llamacpp(tmp_path_factory):
    wait_for_llamacpp_build()
    with running_llamacpp_server() as server:
        yield server


@pytest.fixture
def tap(llamacpp):
    with wiretap(llamacpp.base_url) as t:
        yield t
