"""Web-side faults under load (bench/faults_web.py): 20 raters at full speed against real gunicorn
(4 workers x 4 threads) rate 100 items three times each, while

- gunicorn worker processes are SIGKILLed with submits in flight (the master respawns them), or
- PostgreSQL, a private cluster in a tmp dir, is crash-restarted (`pg_ctl restart -m immediate`).

The raters repeat a request cut off or answered 5xx unchanged (same assignment token, same answers).
Verdict: every acknowledged submit stored exactly once and whole, nothing duplicated, over-assigned or
half-stored, and the study finishes after the faults. The figures go to the JUnit XML (record_property)
for bench/bench_faults.py.

These tests make their own databases (a throwaway one on $DATABASE_URL's server, or the private
cluster), so they do not ask for pytest-django's test database; they only lift its block on database
access while the scenario runs.
"""

from __future__ import annotations

import pytest

from bench.faults_web import run_postgres_restarts, run_worker_kills

RATERS, ITEMS, RATERS_PER_ITEM = 20, 100, 3
FIGURES = ["acknowledged", "stored", "lost", "duplicated", "over_assigned", "stored_incomplete", "completed_items",
           "expected_items", "faults", "recovery_s", "interrupted_submits", "submit_5xx", "server_errors_5xx",
           "respawn_s", "restart_s", "server_errors_after_restart", "seconds"]


@pytest.fixture
def scenario(django_db_blocker, record_property):
    """Run a scenario with database access allowed; record its figures."""
    def _run(fn, **kwargs) -> dict:
        with django_db_blocker.unblock():
            verdict = fn(raters=RATERS, n_items=ITEMS, raters_per_item=RATERS_PER_ITEM, **kwargs)
        for name in FIGURES:
            if name in verdict:
                record_property(name, verdict[name])
        return verdict

    return _run


def assert_nothing_lost_or_duplicated(v: dict) -> None:
    expected_submits = ITEMS * RATERS_PER_ITEM
    assert v["unexpected"] == 0, v["unexpected_sample"]
    assert v["raters_gave_up"] == 0, v
    assert v["lost"] == 0, v
    assert v["duplicated"] == 0, v
    assert v["over_assigned"] == 0, v
    assert v["rater_item_twice"] == 0, v
    assert v["stored_incomplete"] == 0 and v["ratings_not_submitted"] == 0, v  # no half-stored submit
    assert v["stored_not_acknowledged"] == 0, v
    # the study finished after the faults: every item rated RATERS_PER_ITEM times, every submit acknowledged
    assert v["completed_items"] == v["expected_items"] == ITEMS, v
    assert v["acknowledged"] == v["stored"] == expected_submits, v
    assert v["active_left"] == 0, v
    assert v["passed"], v


def test_web_worker_sigkilled_mid_submit(scenario):
    v = scenario(run_worker_kills, kills=3)
    assert v["kills"] >= 3, v
    assert v["interrupted_submits"] >= 1, f"no submit was cut off by a kill; the fault did not happen: {v}"
    assert v["respawn_s"] is not None, v
    assert_nothing_lost_or_duplicated(v)


def test_postgres_crash_restarted_under_load(scenario):
    v = scenario(run_postgres_restarts, restarts=2)
    assert v["restarts"] == 2, v
    assert v["submit_5xx"] >= 1, f"no submit met the restart; the fault did not happen: {v}"
    # a request failing on the database is answered 503 + Retry-After (never hangs, never a 200 for a
    # partial write) ...
    assert set(v["statuses"]) == {"HTTP 503"}, v["statuses"]
    # ... and once PostgreSQL is back, stale connections are replaced before use (CONN_HEALTH_CHECKS)
    assert v["server_errors_after_restart"] == 0, v.get("server_log_tail", v)
    assert_nothing_lost_or_duplicated(v)
