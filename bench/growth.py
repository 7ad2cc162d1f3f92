"""How a cost grows with size: the log–log slope of measurements at three or more sizes, and a plot.

A slope of 1.0 is linear, 2.0 quadratic; n log n reads as a little above 1 over a decade.

    series = {"seconds": [(200_000, 1.9), (600_000, 5.8), (2_000_000, 19.5)], "peak MB": [...]}
    slopes = growth_slopes(series)                       # {"seconds": 1.0, "peak MB": ...}
    plot_growth("import", "items", series)               # bench/results/growth_import.png
    rows = growth_rows("import", "items", series)        # bench rows, one per measure
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
# Above this a measure grows faster than n log n over the sizes benched (n log n from 10^5 to 10^7
# fits a slope of about 1.08); the bench row says so, and the README must give the reason.
SUPERLINEAR_SLOPE = 1.15


def growth_slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of log(value) against log(size)."""
    if len(points) < 2:
        raise ValueError("a slope needs measurements at two sizes at least (three to be believed)")
    sizes, values = np.log([p[0] for p in points]), np.log([max(p[1], 1e-9) for p in points])
    return float(np.polyfit(sizes, values, 1)[0])


def growth_slopes(series: dict[str, list[tuple[float, float]]]) -> dict[str, float]:
    return {measure: growth_slope(points) for measure, points in series.items()}


def plot_growth(name: str, size_label: str, series: dict[str, list[tuple[float, float]]]) -> Path:
    """One log–log panel per measure, with the fitted slope and a linear guide through the first point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(series), figsize=(4.2 * len(series), 3.4), squeeze=False)
    for ax, (measure, points) in zip(axes[0], series.items(), strict=True):
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        ax.loglog(xs, ys, "o-", color="#1f5fa8", label=f"measured (slope {growth_slope(points):.2f})")
        ax.loglog(xs, [ys[0] * x / xs[0] for x in xs], "--", color="#888888", label="linear")
        ax.set_xlabel(size_label)
        ax.set_ylabel(measure)
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"{name}: cost against size")
    fig.tight_layout()
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"growth_{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def growth_rows(name: str, size_label: str, series: dict[str, list[tuple[float, float]]]) -> list[dict]:
    """Bench rows: the slope of each measure (target: no faster than n log n), and the plot drawn."""
    plot_growth(name, size_label, series)
    return [{"metric": f"{name}: growth of {measure} with {size_label} (log–log slope)", "value": slope, "unit": "",
             "target": f"<= {SUPERLINEAR_SLOPE}", "ok": slope <= SUPERLINEAR_SLOPE}
            for measure, slope in growth_slopes(series).items()]
