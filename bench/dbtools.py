"""A throwaway benchmark database on the configured server, so a bench never touches real data."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import environ
import psycopg


def _admin_conninfo() -> dict:
    cfg = environ.Env.db_url_config(os.environ["DATABASE_URL"])
    info = {"dbname": cfg["NAME"], "user": cfg.get("USER") or None, "password": cfg.get("PASSWORD") or None,
            "host": cfg.get("HOST") or cfg.get("OPTIONS", {}).get("host") or None, "port": cfg.get("PORT") or None}
    return {k: v for k, v in info.items() if v}


@contextlib.contextmanager
def bench_database(prefix: str = "bench") -> Iterator[str]:
    """Create a fresh database, migrate it, point Django at it; drop it afterwards."""
    import django
    from django.conf import settings

    name = f"concord_{prefix}_{uuid.uuid4().hex[:8]}"
    admin = _admin_conninfo()
    with psycopg.connect(**admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        if not settings.configured or not getattr(django, "_concord_setup", False):
            django.setup()
            django._concord_setup = True
        from django.core.management import call_command
        from django.db import connections

        connections.close_all()
        settings.DATABASES["default"]["NAME"] = name
        call_command("migrate", verbosity=0)
        yield name
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(**admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
