"""bench/machine_speed.py: the probe measures work (three times the work, a larger figure) and make bench
records it before and after each bench."""

from __future__ import annotations

from bench import __main__ as runner
from bench.machine_speed import _workload, probe_ms


def test_the_probe_grows_with_the_work():
    """The work triples exactly at scale 3 (997 distinct keys, then the rows sorted); the figure grows with it.
    Its ratio is not asserted: on this VM a run of the small probe read 7.3-15 ms from one minute to the next
    (2026-11-29), and a ratio between 2 and 4.5 failed in two of five runs of a few directories in one process."""
    assert _workload(1) - 997 == 2_500 and _workload(3) - 997 == 3 * 2_500
    one, three = probe_ms(rounds=5), probe_ms(rounds=5, scale=3)
    assert 0 < one < three


def test_each_bench_result_names_the_machine_speed_before_and_after(monkeypatch):
    monkeypatch.setattr(runner, "probe_ms", lambda: 21.5)
    speed = runner.machine(30.0)["python_probe_ms"]
    assert speed == {"before": 30.0, "after": 21.5}
