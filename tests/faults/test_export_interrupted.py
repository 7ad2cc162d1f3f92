"""Exports interrupted half way.

a. A release build (annotation.tasks.release_build, acks_late) running in a real
   `celery -A config worker` process is SIGKILLed while it writes the file; a new worker
   gets the task again. Verdict: the release ends ready, its file's sha256 is the one it
   records (and that of a fresh export), no partial or temporary file is left, one release row.
b. A live export streamed by real gunicorn loses its client mid-stream. Verdict: the server
   stays healthy (same worker, serves the next full download), nothing is written, and no
   database session of the server is left in a transaction or still running the export.

The study is made big enough (several hundred thousand ratings, written by two INSERT ... SELECT)
that the file is still being written when the fault strikes; nothing is slowed by a patch.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import struct
import subprocess
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from django.conf import settings
from django.db import connection

from annotation.datasets import export_chunks
from annotation.datasets.writers import temporaries
from annotation.models import Assignment, DatasetRelease, Item, Output, Rating
from annotation.datasets.releases import release_path, releases_create
from bench.loadclient import free_port, start_server, stop_server, worker_pids
from tests.conftest import current_database_url, make_user
from tests.workers import kill_worker, start_worker, stop_worker

from .conftest import app_broker, one_output_items, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

N_ITEMS, N_RATERS = 10_000, 4  # x 4 Likert criteria of rrgen-001 = 160,000 ratings
VISIBILITY_S = 2


def rate_in_bulk(study, raters: int, hashes: int = 1) -> int:
    """Every rater rates every output on every Likert criterion, with a reasoning text that does not
    compress away (so that every format is megabytes long: `hashes` md5 digests of 16 random-looking bytes
    each); returns the ratings written."""
    reasoning = " || ".join(["md5(a.id || k.key)"] + [f"md5(a.id || k.key || '{n}')" for n in range(1, hashes)])
    users = [make_user(f"bulk-rater-{r}") for r in range(raters)]
    keys = [c["key"] for c in study.rubric["criteria"] if c["kind"] == "likert"]
    a, i, o, r = (m._meta.db_table for m in (Assignment, Item, Output, Rating))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {a} (study_id, item_id, rater_id, status, permutation, slot, is_attention_check, draft,"
            " ignored, ignore_reason, comment, time_on_task_ms, created_at, submitted_at)"
            f" SELECT %s, it.id, u.id, 'submitted', '[0]', u.n - 1, false, '{{}}', false, '', '', 30000, now(), now()"
            f" FROM {i} it CROSS JOIN unnest(%s::bigint[]) WITH ORDINALITY AS u(id, n) WHERE it.study_id = %s",
            [study.pk, [u.pk for u in users], study.pk])
        cursor.execute(
            f"INSERT INTO {r} (assignment_id, output_id, criterion, value, score, reasoning, created_at, updated_at)"
            f" SELECT a.id, o.id, k.key, to_jsonb(v.x), v.x, {reasoning}, now(), now()"
            f" FROM {a} a JOIN {o} o ON o.item_id = a.item_id CROSS JOIN unnest(%s::text[]) AS k(key)"
            " CROSS JOIN LATERAL (SELECT 1 + (a.id * 7 + length(k.key)) %% 7 AS x) v WHERE a.study_id = %s",
            [keys, study.pk])
        cursor.execute("ANALYZE")
    return Rating.objects.filter(assignment__study=study).count()


def sha256_of(chunks) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    for chunk in chunks:
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def wait_release_ends(release, log: Path, what: str) -> float:
    """Wait for the release to be ready or failed; returns the seconds waited."""
    started = time.monotonic()

    def ended():
        release.refresh_from_db()
        return release.status in (DatasetRelease.Status.READY, DatasetRelease.Status.FAILED)

    try:
        wait_for(ended, 60, interval=0.2, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: status {release.status}\n{log.read_text()[-5000:]}") from None
    return time.monotonic() - started


def test_release_build_sigkilled_mid_write_is_rebuilt_whole_by_the_next_worker(private_redis, make_study,
                                                                              media_root, tmp_path,
                                                                              record_property):
    study = make_study("rrgen-001", items_text=one_output_items(N_ITEMS, prefix="rel"))
    n_ratings = rate_in_bulk(study, N_RATERS)
    log = tmp_path / "workers.log"
    first = second = None
    with app_broker(private_redis.url):  # the build task goes to a private broker no other worker reads
        try:
            first = start_worker(log, queues="builds", redis_url=private_redis.url, visibility_s=VISIBILITY_S,
                                 name="release-first", concurrency=1)
            (release,) = releases_create(study=study, version="1.0.0", formats=["jsonl"])
            final = release_path(release)
            wait_for(lambda: any(p.stat().st_size > 0 for p in temporaries(final)), 90, interval=0.01,
                     what="the first worker to start writing the release file")
            kill_worker(first)
            partial = {p.name: p.stat().st_size for p in temporaries(final)}
            release.refresh_from_db()
            assert release.status == DatasetRelease.Status.BUILDING and not final.exists(), \
                "the build ended before the kill; make the study bigger"
            # the broker hands the unacknowledged task out again once it is older than the visibility timeout
            time.sleep(VISIBILITY_S + 1)
            second = start_worker(log, queues="builds", redis_url=private_redis.url, visibility_s=VISIBILITY_S,
                                  name="release-second", concurrency=1)
            rebuilt_s = wait_release_ends(release, log, "the release to be rebuilt")
        finally:
            stop_worker(first)
            stop_worker(second)

    on_disk = hashlib.sha256(final.read_bytes()).hexdigest() if final.exists() else None
    fresh_sha, fresh_size = sha256_of(export_chunks(study, "jsonl"))
    left = sorted(p.name for p in final.parent.iterdir() if p != final)
    record_property("ratings", n_ratings)
    record_property("partial_bytes_at_kill", sum(partial.values()))
    record_property("release_rows", DatasetRelease.objects.filter(study=study).count())
    record_property("files_left_besides_release", len(left))
    record_property("rebuilt_s", round(rebuilt_s, 2))
    assert partial, "no temporary file was being written at the kill"
    assert release.status == DatasetRelease.Status.READY, (release.status, release.error, log.read_text()[-3000:])
    assert on_disk == release.sha256 == fresh_sha and release.size == final.stat().st_size == fresh_size
    assert left == [], f"partial or temporary files left: {left}"
    assert DatasetRelease.objects.filter(study=study).count() == 1


def test_a_release_build_message_lost_by_the_broker_is_sent_again(private_redis, make_study, media_root, tmp_path,
                                                                  record_property):
    """The release's build message is lost before any worker gets it (as a Redis restart can
    drop a message being handed out): a worker, on (re)connecting, finds the pending release
    that no message covers and sends its build again (config/celery.py RequeueLostWork)."""
    study = make_study("rrgen-001")
    log = tmp_path / "worker.log"
    worker = None
    with app_broker(private_redis.url):
        (release,) = releases_create(study=study, version="1.0.0", formats=["csv"])
        lost = private_redis.client().lpop("builds")
        assert lost and b"annotation.tasks.release_build" in lost
        try:
            worker = start_worker(log, queues="builds", redis_url=private_redis.url, visibility_s=VISIBILITY_S,
                                  name="release-lost", concurrency=1)
            recovered_s = wait_release_ends(release, log, "the lost build to be sent again")
        finally:
            stop_worker(worker)
    final = release_path(release)
    record_property("messages_lost", 1)
    record_property("release_rows", DatasetRelease.objects.filter(study=study).count())
    record_property("recovery_s", round(recovered_s, 2))
    assert "its build message was lost by the broker; sent again" in log.read_text()
    assert release.status == DatasetRelease.Status.READY, (release.status, release.error)
    assert hashlib.sha256(final.read_bytes()).hexdigest() == release.sha256 == sha256_of(export_chunks(study, "csv"))[0]
    assert DatasetRelease.objects.filter(study=study).count() == 1


# ------------------------------------------------------------------------------------- b. streamed download

SERVER_APP_NAME = "concord-fault-test-gunicorn"


@contextlib.contextmanager
def running_gunicorn(media: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """gunicorn as docker-compose.yml runs it (gthread), one worker, on the test database."""
    port = free_port()
    env = {"MEDIA_ROOT": str(media),
           "PGAPPNAME": SERVER_APP_NAME}  # libpq tags the server's sessions, over TCP or a Unix socket alike
    proc = start_server(port, settings.SECRET_KEY, database_url=current_database_url(), extra_env=env,
                        gunicorn_args=["--workers", "1", "--worker-class", "gthread", "--threads", "4",
                                       "--log-level", "warning"])
    try:
        yield f"http://127.0.0.1:{port}", proc
    finally:
        stop_server(proc)


def server_db_sessions(master: subprocess.Popen) -> list[tuple[int, str, str]]:
    """(pid, state, query) of the PostgreSQL sessions the gunicorn server holds (its application_name)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid, state, query FROM pg_stat_activity WHERE datname = current_database()"
                       " AND application_name = %s", [SERVER_APP_NAME])
        return cursor.fetchall()


CLIENT_RCVBUF = 64 * 1024  # the client's receive buffer, kept small: the server's send buffer is what holds the rest


def socket_buffers_bound() -> int:
    """The most bytes the kernel can hold between a server that writes and a client that stopped reading:
    the server's largest send buffer (tcp_wmem's maximum, autotuned up to it) and the client's receive buffer
    (the kernel doubles the size asked for)."""
    return int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2]) + 2 * CLIENT_RCVBUF


def open_and_read(base: str, path: str, cookie: str, keep: int) -> tuple[socket.socket, int, bytes]:
    """GET `path` on a raw socket and read about `keep` bytes of the answer."""
    host, port = base.removeprefix("http://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, CLIENT_RCVBUF)  # before connecting: sets the window
    sock.settimeout(30)
    sock.connect((host, int(port)))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nCookie: sessionid={cookie}\r\n"
                 "Connection: close\r\n\r\n".encode())
    data = b""
    while len(data) < keep:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return sock, status, data


def still_answering(worker: int, sock: socket.socket) -> bool:
    """Whether the gunicorn worker still holds the client's connection: it closes it when the response ends
    (the request said Connection: close), so holding it means the export is not all written yet."""
    import psutil

    port = sock.getsockname()[1]
    try:
        held = psutil.Process(worker).net_connections(kind="tcp")
    except psutil.NoSuchProcess:
        return False
    return any(c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED for c in held)


def reset(sock: socket.socket) -> None:
    """Drop the connection as a client that vanished does: a TCP reset, no orderly close."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_client_gone_mid_stream_leaves_the_server_healthy_and_nothing_open(make_study, researcher, media_root,
                                                                          record_property, fmt):
    from django.test import Client

    study = make_study("rrgen-001", items_text=one_output_items(N_ITEMS, prefix="dl"), researchers=[researcher])
    # Parquet compresses: with one digest a rating its file (3.2 MB) fit in the socket buffers, the server wrote
    # it all and closed before the client went, and no fault struck mid-export. Four digests make it 13 MB.
    n_ratings = rate_in_bulk(study, N_RATERS, hashes=4 if fmt == "parquet" else 1)
    expected_sha, expected_size = sha256_of(export_chunks(study, fmt))
    assert expected_size > 2 * socket_buffers_bound(), \
        f"the {fmt} export ({expected_size} bytes) could sit whole in the socket buffers: make the study bigger"
    browser = Client()
    browser.force_login(researcher)
    cookie = browser.cookies[settings.SESSION_COOKIE_NAME].value
    path = f"/studies/{study.slug}/datasets/export/{fmt}/"
    media_root.mkdir(parents=True, exist_ok=True)

    with running_gunicorn(media_root) as (base, master):
        workers = set(worker_pids(master))
        sock, status, got = open_and_read(base, path, cookie, keep=64 * 1024)
        # The fault strikes mid-export: the worker still holds the connection (it ends the response by closing
        # it), its export bigger than the socket buffers can take. Whether its queries still run then depends
        # on the format: JSONL's COPY is paced by the client; Parquet's range readers may have read all ahead.
        (worker,) = workers
        try:
            answering = wait_for(lambda: still_answering(worker, sock), 30, interval=0.05,
                                 what="the server to be writing the export")
            exporting = [q for _, state, q in server_db_sessions(master) if state in ("active", "idle in transaction")]
        finally:
            reset(sock)
        assert answering
        assert status == 200, got[:500]
        assert len(got) < expected_size / 4, "the client read most of the export: not a mid-stream disconnect"

        def settled():  # the worker notices at its next write, cancels the COPY and ends the request
            sessions = server_db_sessions(master)
            return sessions and all(state == "idle" for _, state, _ in sessions)

        started = time.monotonic()
        try:
            wait_for(settled, 60, interval=0.1, what="the server's database sessions to be idle")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {server_db_sessions(master)}") from None
        settled_s = time.monotonic() - started

        # still healthy: the same worker serves a whole download, byte for byte the export
        with httpx.Client(base_url=base, cookies={settings.SESSION_COOKIE_NAME: cookie}, timeout=120) as http:
            with http.stream("GET", path) as response:
                assert response.status_code == 200
                full_sha, full_size = sha256_of(response.iter_bytes())
        after = set(worker_pids(master))
        sessions = server_db_sessions(master)
    written = [p for p in media_root.rglob("*") if p.is_file()]
    record_property("format", fmt)
    record_property("ratings", n_ratings)
    record_property("bytes_read_before_reset", len(got))
    record_property("export_queries_running_at_reset", len(exporting))
    record_property("export_bytes", expected_size)
    record_property("sessions_settled_s", round(settled_s, 2))
    record_property("files_written", len(written))
    assert (full_sha, full_size) == (expected_sha, expected_size)
    assert after == workers, "the gunicorn worker died or was replaced"
    assert all(state == "idle" for _, state, _ in sessions), sessions
    assert written == []
    assert DatasetRelease.objects.count() == 0 and Rating.objects.count() == n_ratings
