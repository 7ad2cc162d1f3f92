"""llama.cpp's own server on a tiny random model (judges/llamacpp.py), started once for the package,
and a wiretap in front of it per test that records what the server answered."""
from __future__ import annotations

import pytest

from judges.llamacpp import running_llamacpp_server
from tests.judges_platform.conftest import make_judge, media_root  # noqa: F401 (fixtures shared with the platform tests)

from .wiretap import wiretap


@pytest.fixture(scope="session")
def llamacpp(tmp_path_factory):
    with running_llamacpp_server() as server:
        yield server


@pytest.fixture
def tap(llamacpp):
    with wiretap(llamacpp.base_url) as t:
        yield t
