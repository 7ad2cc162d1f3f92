"""The demo, loaded once per test run and copied back for each further module that needs it.

`load_demo` takes about 28 s of CPU (it simulates every study, runs its judges over HTTP and builds its releases)
and six modules start from it. After the first load the run keeps what it wrote: every table's rows
(COPY ... TO STDOUT in PostgreSQL's binary format), the sequences and the media folder (the releases' files). A
later module gets the same rows, ids and files back in about a second. The pytest-xdist workers of a run share
it through a folder of the run (the workers' temporary folders' parent), under a lock: the first worker to need
the demo loads it while another that needs it then waits, since its own test database was migrated the same way.
Restoring needs the replica role (a superuser's), as tests/fast_flush.py does; without it the demo is loaded
again."""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.fast_flush import can_skip_triggers, tables_with_triggers


@dataclass(frozen=True)
class Snapshot:
    output: object  # what the first load returned (what load_demo printed, and its seconds)
    tables: dict[str, bytes]
    sequences: dict[str, tuple[int, bool]]
    media: Path


_kept: dict[str, Snapshot] = {}


def _tables(connection) -> list[str]:
    return sorted(connection.introspection.django_table_names(only_existing=True, include_views=False))


def take(connection, output: object, media_root: Path) -> Snapshot:
    tables: dict[str, bytes] = {}
    with connection.cursor() as cursor:
        for table in _tables(connection):
            with cursor.copy(f'COPY "{table}" TO STDOUT (FORMAT binary)') as copy:
                tables[table] = b"".join(bytes(block) for block in copy)
        cursor.execute("SELECT sequencename, last_value, last_value IS NOT NULL FROM pg_sequences"
                       " WHERE schemaname = current_schema()")
        sequences = {name: (value or 1, called) for name, value, called in cursor.fetchall()}
    media = Path(tempfile.mkdtemp(prefix="concord-demo-media-"))
    if media_root.exists():
        shutil.copytree(media_root, media, dirs_exist_ok=True)
    return Snapshot(output, tables, sequences, media)


def restore(connection, snapshot: Snapshot, media_root: Path) -> None:
    """The database and media folder as they were when `snapshot` was taken (the database emptied first)."""
    from django.db import transaction

    triggered = tables_with_triggers(connection, list(snapshot.tables))
    rest = [t for t in snapshot.tables if t not in triggered]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")  # no foreign key checked while copying
        cursor.execute("SET LOCAL lock_timeout = '60s'")  # a session holding a table fails this, never hangs it
        # TRUNCATE, not DELETE: the rows come back with the ids they had, which the rows of an earlier module held
        # before; fresh files for every table and index keep nothing of those. (Full runs saw PostgreSQL 16.2
        # count three unrated items of the restored demo as rated by a NOT EXISTS's index plan, after DELETEs and
        # once after this too: tests/protocols/test_demo.py counts per item, docs/reference/test-suite.md.)
        cursor.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in snapshot.tables))
        for table in sorted(triggered):  # their triggers write to tables emptied and filled after them
            _copy_in(cursor, table, snapshot.tables[table])
        for table in rest:
            cursor.execute(f'DELETE FROM "{table}"')
            _copy_in(cursor, table, snapshot.tables[table])
        for name, (value, called) in snapshot.sequences.items():
            cursor.execute("SELECT setval(%s, %s, %s)", [name, value, called])
    media_root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(snapshot.media, media_root, dirs_exist_ok=True)


def _copy_in(cursor, table: str, data: bytes) -> None:
    with cursor.copy(f'COPY "{table}" FROM STDIN (FORMAT binary)') as copy:
        copy.write(data)


def run_folder(tmp_path_factory) -> Path | None:
    """A folder every pytest-xdist worker of this run sees (the master's temporary folder, whose `popen-gw<n>`
    folders are the workers'; pytest removes it with its other old runs), or None in a run of one process."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    return tmp_path_factory.getbasetemp().parent


def write(snapshot: Snapshot, folder: Path) -> None:
    """`snapshot` under `folder` (its rows and sequences in one file, its media folder beside), whole or not at all."""
    partial = Path(tempfile.mkdtemp(prefix=".writing-", dir=folder.parent))
    (partial / "rows.pickle").write_bytes(pickle.dumps((snapshot.output, snapshot.tables, snapshot.sequences)))
    shutil.copytree(snapshot.media, partial / "media")
    partial.rename(folder)


def read(folder: Path) -> Snapshot | None:
    if not (folder / "rows.pickle").exists():
        return None
    output, tables, sequences = pickle.loads((folder / "rows.pickle").read_bytes())
    return Snapshot(output, tables, sequences, folder / "media")


def demo(connection, media_root: Path, load, shared: Path | None = None):
    """The demo in the database and media folder: loaded by `load()` the first time in this run (in this process
    when `shared` is None; else the first process of those that share the folder `shared`), copied back from
    then on. Returns what that first `load()` returned."""
    if not can_skip_triggers(connection):
        return load()
    kept = _kept.get("demo")
    if kept is None and shared is not None:
        with open(shared / "demo.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another worker loading the demo: wait for its rows
            kept = read(shared / "demo")
            if kept is None:
                output = load()
                _kept["demo"] = take(connection, output, media_root)
                write(_kept["demo"], shared / "demo")
                return output
        _kept["demo"] = kept
    if kept is not None:
        restore(connection, kept, media_root)
        return kept.output
    output = load()
    _kept["demo"] = take(connection, output, media_root)
    return output
