"""The report's agreement bootstrap at the 10M-rating report's shape (500,000 items x 4 raters x 5
numeric criteria, 1,000 resamples): the resample counts weighed one draw batch at a time (8 resamples
at this size: every product reads all the items' sums) against several batches at once
(annotation.reports.stats.PRODUCT_BYTES), and whether the results are identical.

    python -m bench.bootstrap_batches > bench/results/bootstrap_batches.txt
"""

from __future__ import annotations

import os
import time

import numpy as np

N_ITEMS, RATERS, CRITERIA, N_BOOT = 500_000, 4, 5, 1000


def main() -> None:
    from annotation.reports import stats

    rng = np.random.default_rng(11)
    unit = np.repeat(np.arange(N_ITEMS), RATERS)
    specs = {}
    for c in range(CRITERIA):
        truth = rng.normal(4, 1, size=N_ITEMS)
        x = np.clip(np.round(truth[unit] + rng.normal(0, 0.8, size=unit.size)), 1, 7)
        specs[f"c{c}"] = (unit, np.arange(N_ITEMS), x, "numeric")
    default, results = stats.PRODUCT_BYTES, {}
    for label, product_bytes in (("one draw batch per product (before)", 1), ("batches weighed together", default),
                                 ("one draw batch per product (before), again", 1),
                                 ("batches weighed together, again", default)):
        stats.PRODUCT_BYTES = product_bytes
        t0 = time.perf_counter()
        results[label] = stats.agreement_bootstraps(specs, n_items=N_ITEMS, n_boot=N_BOOT, seed=0)
        print(f"{label}: {time.perf_counter() - t0:.2f} s (load average {os.getloadavg()[0]:.1f})", flush=True)
    stats.PRODUCT_BYTES = default
    print("identical results:", len({repr(r) for r in results.values()}) == 1)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CONCORD_TESTING", "1")
    import django

    django.setup()
    main()
