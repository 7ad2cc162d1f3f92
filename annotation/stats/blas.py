"""One BLAS thread around a computation, where threadpoolctl is installed (it is not a dependency of the app).

On two busy cores OpenBLAS's spinning threads made GLAD 3x and noisy Bradley–Terry 5x slower on a million
labels, a 500 x 500 Cholesky take 0.36 s instead of 6 ms (2026-11-28), and the report's bootstrap products
10 to 40 times slower (bench/bench_report_x10.py). The sums are the same."""

from __future__ import annotations

import contextlib
import functools


@functools.cache
def _controller():
    """The BLAS libraries, found once: `threadpool_limits` walks every loaded library on each call (1.5 ms here,
    more in a process that has loaded torch; the suite made thousands of such calls, 2026-12-07)."""
    import numpy  # noqa: F401  (their OpenBLAS builds are loaded before the one scan)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread():
    try:
        controller = _controller()
    except ImportError:  # without threadpoolctl, BLAS keeps its own setting
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")
