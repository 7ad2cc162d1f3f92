"""The rating loop through PgBouncer in transaction mode (1.24.1 built from Debian's source by
scripts/ensure-pgbouncer.sh, else Debian 12's 1.18; bench/pgbouncer.py starts it): real gunicorn, two
processes, prepared statements kept where PgBouncer keeps them and server-side cursors off
(bench.pgbouncer.pooled_env). Ten raters at full speed finish a study;
every submit is stored once, nothing over-assigned, and PostgreSQL never sees more connections than
the pool holds; whether the web processes reach PgBouncer by TCP or by its Unix socket."""

from __future__ import annotations

import asyncio
import os
import secrets
from urllib.parse import urlsplit, urlunsplit

import pytest

from bench.bench_annotator_loop import Phase, _BackendCounter, _run_phase
from bench.faults_web import _bench_db
from bench.loadclient import audit, free_port, setup_study, start_server, stop_server
from bench.pgbouncer import pooled_env, running_pgbouncer

RATERS, ITEMS, RATERS_PER_ITEM, POOL = 10, 30, 2, 3


@pytest.fixture
def unblocked(django_db_blocker):
    with django_db_blocker.unblock():
        yield


@pytest.mark.parametrize("unix_socket", [False, True], ids=["tcp", "unix-socket"])
def test_a_study_rated_through_pgbouncer_in_transaction_mode(unblocked, unix_socket):
    with _bench_db() as db_name:
        key = secrets.token_urlsafe(40)
        slug, sessions = setup_study(ITEMS, key, raters=RATERS, raters_per_item=RATERS_PER_ITEM,
                                     name="through pgbouncer")
        direct = urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path="/" + db_name))
        counter = _BackendCounter(db_name)
        phase = Phase("through PgBouncer", 60.0, None)
        with running_pgbouncer(direct, pool_size=POOL, max_clients=50, unix_socket=unix_socket) as (pooled, _):
            assert ("host=%2F" in pooled) == unix_socket  # the web processes reach PgBouncer by its socket
            port = free_port()
            server = start_server(port, key, database_url=pooled, extra_env=pooled_env(),
                                  gunicorn_args=["--workers", "2", "--worker-class", "gthread", "--threads", "4"])
            counter.start()
            try:
                asyncio.run(_run_phase(f"http://127.0.0.1:{port}", slug, sessions, phase))
            finally:
                counter.halt.set()
                stop_server(server)
        counter.join()
        verdict = audit(slug, phase.acknowledged)
    assert phase.errors == [] and phase.done_raters == RATERS  # every rater ran out of work: the study is done
    assert verdict["acknowledged"] == verdict["stored"] == ITEMS * RATERS_PER_ITEM, verdict
    assert verdict["lost_or_incomplete"] == verdict["duplicate_ratings"] == 0, verdict
    assert verdict["over_assigned_items"] == verdict["rater_item_twice"] == 0, verdict
    assert 1 <= counter.most <= POOL  # 8 web threads, at most POOL PostgreSQL connections
