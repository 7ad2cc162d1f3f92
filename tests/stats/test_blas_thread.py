"""annotation.stats.blas.one_blas_thread: every BLAS library loaded runs one thread inside it, as threadpoolctl's
own fresh scan reads them, and keeps its setting outside; the scan it relies on is made once."""

from __future__ import annotations

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_info

from annotation.stats.blas import _controller, one_blas_thread


def _blas_threads() -> dict[str, int]:
    return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def test_one_blas_thread_inside_and_the_setting_kept_outside():
    before = _blas_threads()
    assert before, "no BLAS library found: numpy and SciPy load OpenBLAS"
    with one_blas_thread():
        inside = _blas_threads()
        a = np.random.default_rng(0).normal(size=(60, 60))
        scipy.linalg.cho_factor(a @ a.T + 60 * np.eye(60))  # BLAS in use under the limit
    assert inside == {path: 1 for path in before}
    assert _blas_threads() == before
    with one_blas_thread():
        pass
    assert _controller.cache_info().misses == 1  # the libraries were scanned once
