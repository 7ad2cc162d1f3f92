"""The log–log slope the scale benchmarks report: known power laws give their exponent back."""

import math

import pytest

from bench.growth import growth_rows, growth_slope


@pytest.mark.parametrize("exponent", [0.5, 1.0, 2.0])
def test_a_power_law_gives_its_exponent(exponent):
    points = [(n, 3e-6 * n**exponent) for n in (10_000, 100_000, 1_000_000)]
    assert growth_slope(points) == pytest.approx(exponent, abs=1e-9)


def test_n_log_n_over_two_decades_reads_a_little_above_linear():
    slope = growth_slope([(n, n * math.log(n)) for n in (100_000, 1_000_000, 10_000_000)])
    assert 1.05 < slope < 1.12


def test_one_size_is_refused():
    with pytest.raises(ValueError, match="two sizes"):
        growth_slope([(1000, 1.0)])


def test_rows_flag_quadratic_growth_and_draw_the_plot(tmp_path, monkeypatch):
    import bench.growth as growth

    monkeypatch.setattr(growth, "RESULTS", tmp_path)
    rows = growth_rows("demo", "items", {"seconds": [(n, n**2) for n in (10, 100, 1000)],
                                         "peak MB": [(n, 50 + n / 1000) for n in (10, 100, 1000)]})
    assert [r["ok"] for r in rows] == [False, True]
    assert (tmp_path / "growth_demo.png").stat().st_size > 1000
