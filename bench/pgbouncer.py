"""Debian's PgBouncer in transaction mode in front of the bench's PostgreSQL, started and stopped by the
bench as config/embedded.py starts the embedded servers (scripts/ensure-pgbouncer.sh installs it).

    with running_pgbouncer(database_url, pool_size=10) as (url, proc):   # url: the same database via PgBouncer
        start_server(port, key, database_url=url, extra_env=pooled_env())

PgBouncer before 1.21 keeps no prepared statements in transaction mode, so behind Debian 12's 1.18 the
web processes run with DATABASE_PREPARED_STATEMENTS=0 (annotation.db binds on the server without naming
statements). From 1.21 PgBouncer tracks the protocol's named statements itself (max_prepared_statements),
and the loop keeps its prepared statements: scripts/ensure-pgbouncer.sh builds Debian 13's 1.24.1 from
Debian's source archive into .data/pgbouncer/ for that. Server-side cursors stay off either way (Django's
advice for transaction pooling). Authentication: trust on 127.0.0.1, the users listed in a private auth file.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from bench.loadclient import free_port

ROOT = Path(__file__).resolve().parent.parent
BUILT = ROOT / ".data" / "pgbouncer" / "bin" / "pgbouncer"  # scripts/ensure-pgbouncer.sh builds it
PGBOUNCER = os.environ.get("CONCORD_PGBOUNCER") or (str(BUILT) if BUILT.exists() else "/usr/sbin/pgbouncer")
RUN_AS = os.environ.get("CONCORD_PGBOUNCER_USER", "postgres")  # when started by root
MAX_PREPARED_STATEMENTS = 200  # per server connection; the loop runs about two dozen distinct statements


def pgbouncer_version() -> str:
    out = subprocess.run([PGBOUNCER, "--version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0].split()[-1]


def keeps_prepared_statements() -> bool:
    """PgBouncer 1.21 and later keep the protocol's prepared statements in transaction mode."""
    return tuple(int(p) for p in pgbouncer_version().split(".")[:2]) >= (1, 21)


def pooled_env() -> dict[str, str]:
    """What a web process needs behind this PgBouncer in transaction mode (config/settings.py reads both)."""
    return {"DATABASE_PREPARED_STATEMENTS": "1" if keeps_prepared_statements() else "0",
            "DATABASE_DISABLE_SERVER_SIDE_CURSORS": "1"}


@contextlib.contextmanager
def running_pgbouncer(database_url: str, *, pool_size: int = 10, max_clients: int = 1000,
                      port: int | None = None, unix_socket: bool = False) -> Iterator[tuple[str, subprocess.Popen]]:
    """PgBouncer on 127.0.0.1:port (a free one by default) pooling `database_url`'s server in transaction
    mode with at most `pool_size` server connections per database and user; yields the URL that reaches
    the same database through it, and the process. With `unix_socket`, that URL reaches PgBouncer by its
    Unix socket instead (as a PgBouncer beside the web processes is reached): no TCP stack on the way."""
    if not Path(PGBOUNCER).exists():
        raise RuntimeError(f"PgBouncer not found at {PGBOUNCER}: run scripts/ensure-pgbouncer.sh")
    parts = urlsplit(database_url)
    user = parts.username or "postgres"
    query = parse_qs(parts.query)
    # The embedded server (config/embedded.py) is reached by its socket directory: ?host=/path.
    upstream = query.pop("host", [parts.hostname or "127.0.0.1"])[0]
    port = port or free_port()
    work = Path(tempfile.mkdtemp(prefix="concord-pgbouncer-"))
    (work / "users.txt").write_text(f'"{user}" ""\n')
    (work / "pgbouncer.ini").write_text(f"""[databases]
* = host={upstream} port={parts.port or 5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir = {work if unix_socket else ''}
auth_type = trust
auth_file = {work / 'users.txt'}
pool_mode = transaction
default_pool_size = {pool_size}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = {max_clients}
max_db_connections = {pool_size}
server_reset_query =
ignore_startup_parameters = extra_float_digits
logfile = {work / 'pgbouncer.log'}
pidfile = {work / 'pgbouncer.pid'}
log_connections = 0
log_disconnections = 0
""" + (f"max_prepared_statements = {MAX_PREPARED_STATEMENTS}\n" if keeps_prepared_statements() else ""))
    command = [PGBOUNCER, str(work / "pgbouncer.ini")]
    if os.geteuid() == 0:  # PgBouncer refuses to run as root: as the package's own account, or as the
        # embedded server's, whose socket directory only its owner may enter
        owner = pwd.getpwuid(os.stat(upstream).st_uid) if upstream.startswith("/") else pwd.getpwnam(RUN_AS)
        for path in (work, *work.iterdir()):
            os.chown(path, owner.pw_uid, owner.pw_gid)
        command[1:1] = ["-u", owner.pw_name]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 15
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                log = (work / "pgbouncer.log")
                raise RuntimeError("PgBouncer did not start: " + (log.read_text()[-2000:] if log.exists() else ""))
            time.sleep(0.1)
        netloc = f"{user}@{'' if unix_socket else '127.0.0.1'}:{port}"
        if unix_socket:
            query["host"] = [str(work)]
        yield urlunsplit(parts._replace(netloc=netloc, query=urlencode(query, doseq=True))), proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(work, ignore_errors=True)
