"""The database backend used when DATABASE_URL is unset: PostgreSQL's, except that connecting
says what to do instead of failing on a made-up host. Commands that need no database
(agreement, gold_eval, comparisons) never connect, so they still run."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.postgresql.base import DatabaseWrapper as PostgresWrapper

HELP = ("DATABASE_URL is not set, and no `make run` is serving on its embedded servers. Either start "
        "`make run` in another terminal (manage.py then finds its servers through .data/servers.env), or set "
        "DATABASE_URL (and REDIS_URL), e.g. DATABASE_URL=postgres://user:password@127.0.0.1:5432/concord")


class DatabaseUrlMissing(ImproperlyConfigured):
    pass


class DatabaseWrapper(PostgresWrapper):
    def get_new_connection(self, conn_params):
        raise DatabaseUrlMissing(HELP)
