"""bench/machine_speed.py: the probe measures work (twice the work, about twice the figure) and make bench
records it before and after each bench."""

from __future__ import annotations

from bench import __main__ as runner
from bench.machine_speed import probe_ms


def test_the_probe_grows_with_the_work():
    one, three = probe_ms(rounds=3), probe_ms(rounds=3, scale=3)
    assert one > 0
    assert 2.0 < three / one < 4.5


def test_each_bench_result_names_the_machine_speed_before_and_after(monkeypatch):
    monkeypatch.setattr(runner, "probe_ms", lambda: 21.5)
    speed = runner.machine(30.0)["python_probe_ms"]
    assert speed == {"before": 30.0, "after": 21.5}
