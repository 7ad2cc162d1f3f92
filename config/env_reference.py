"""The environment variables Concord reads, found in its source, with what each means: the settings
reference (docs/reference/settings.md, checked in so that the README's link works on a clone) is generated
from this by `.venv/bin/python -m config.env_reference`, and tests/docs/test_settings_reference.py fails
when a variable is read but not described here, described but no longer read, or the page is stale.

`variables_read()` parses the modules (never imports them): `env.TYPE("NAME", default=...)` of
django-environ, `os.environ.get("NAME", default)`, `os.getenv` and `os.environ["NAME"]`. A name the
code only sets (`os.environ.setdefault`) or computes (a judge's `api_key_env`) is not a read.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What a deployment or `make run` imports: the project's packages and gunicorn's settings.
SOURCES = ("config", "annotation", "judges", "rubrics", "concord", "gunicorn.conf.py")
SKIP_PARTS = {"migrations", "tests", "__pycache__"}
_MAY_READ = re.compile(r"\benv[.(]|os\.environ|getenv")

# NAME -> what it means (defaults come from the code). Keep one sentence or two: the why, the unit.
MEANINGS: dict[str, str] = {
    "SECRET_KEY": "Django's signing key; required to serve or run workers (not for offline commands); never "
                  "committed. Unset under `make run` and the tests, a throwaway key is used",
    "DEBUG": "`1` for development only: Django's debug page (settings, local variables) on an error; implies "
             "`CONCORD_LOCAL_SERVING`",
    "CONCORD_LOCAL_SERVING": "`1`: a development server on loopback over plain http (`make run` sets it): loopback "
                             "hosts, cookies without `Secure`, static files from `static/`, a throwaway key; errors "
                             "still show the product's pages",
    "CONCORD_TESTING": "set by `make test` (config/launcher.py): fast password hashing, loopback hosts, a "
                       "throwaway key. Never in production",
    "ALLOWED_HOSTS": "comma-separated host names Concord answers for",
    "CSRF_TRUSTED_ORIGINS": "comma-separated origins (`https://concord.example.org`) trusted for form posts",
    "CONCORD_DATA_DIR": "where `make run` keeps its embedded servers and announces their URLs (`servers.env`); a "
                        "`manage.py` started beside it with `DATABASE_URL`/`REDIS_URL` unset uses those servers",
    "DATABASE_URL": "e.g. `postgres://user:pass@host:5432/concord` (PostgreSQL only); a server or PgBouncer on the "
                    "same host by its Unix socket: `postgres://user@:6432/concord?host=/run/pgbouncer`. Unset, `make "
                    "run` and `make test` start their own server; commands that need no database still run, and "
                    "one that connects says what to set",
    "CONN_MAX_AGE": "seconds a web or worker thread keeps its PostgreSQL connection between requests (0: a new one "
                    "for each request)",
    "DATABASE_PREPARED_STATEMENTS": "`0` for a connection pooler that cannot keep prepared statements (PgBouncer "
                                    "before 1.21 in transaction mode); the rating loop's statements are prepared "
                                    "by default",
    "DATABASE_DISABLE_SERVER_SIDE_CURSORS": "`1` behind a transaction-mode pooler, where a cursor cannot outlive "
                                            "its transaction (bulk reads then fetch without a named cursor)",
    "REDIS_URL": "Celery broker and cache, e.g. `redis://host:6379/0`; unset, `make run` and `make test` start "
                 "their own server",
    "AXES_ENABLED": "`0` turns off login throttling (django-axes)",
    "AXES_FAILURE_LIMIT": "failed logins for one username from one address before that pair is refused",
    "AXES_COOLOFF_MINUTES": "how long, from the last allowed failure, a throttled username and address are refused",
    "TRUSTED_PROXY_COUNT": "reverse proxies (load balancers) in front of Concord: the client's address for login "
                           "throttling is the `X-Forwarded-For` entry the outermost one appended; 0 uses the "
                           "connection's address. Set 1 behind one balancer (how-to/add-nodes.md)",
    "STATIC_ROOT": "where `collectstatic` puts the static files gunicorn serves",
    "LOGIN_ADDRESS_FAILURE_LIMIT": "failed logins from one address over any accounts before that address is "
                                   "refused for AXES_COOLOFF_MINUTES (a spray over many usernames)",
    "API_TOKEN_DAYS": "days an API token lasts; its owner makes a new one on /account/tokens/",
    "CROWD_BROWSER_IDLE_MINUTES": "minutes a crowd participant's first browser must be idle before a second "
                                  "browser with the same panel id may take over",
    "CROWD_SESSION_SECONDS": "how long a crowd participant's session lasts (staff sessions last two weeks)",
    "SECURE_REDIRECT_EXEMPT": "paths (regular expressions) the HTTPS redirect leaves alone, e.g. a load "
                              "balancer's plain-http health check",
    "CONCORD_JUDGE_KEY_VARIABLES": "comma-separated variable names judges may name as keys besides `*_API_KEY` "
                                   "and `JUDGE_*` (never SECRET_KEY, DATABASE_URL, REDIS_URL)",
    "CONCORD_JUDGE_PRIVATE_ENDPOINTS": "in production, the private or loopback hosts judges may call "
                                       "(link-local, metadata and Concord's own ports are always refused)",
    "CONCORD_LIMITS": "JSON object of [limits](limits.md) to change, by key, e.g. "
                      "`{\"exports.per_study_per_hour\": 500}`",
    "TASK_TIME_LIMIT_JUDGES_S": "seconds a judge chunk may run before it fails with that reason; 30 s later "
                                "its process is killed (keep below CELERY_VISIBILITY_TIMEOUT)",
    "TASK_TIME_LIMIT_BUILDS_S": "seconds a release build, report or export task may run before it fails with "
                                "that reason",
    "TASK_TIME_LIMIT_HOUSEKEEPING_S": "seconds a housekeeping task (deadlines, purges, sweeps) may run before it "
                                      "fails with that reason",
    "MEDIA_ROOT": "where exports, releases and judge-run files are written (shared by every node)",
    "CELERY_VISIBILITY_TIMEOUT": "seconds before a task a worker took and never finished (the worker died, or its "
                                 "broker connection) is delivered again, within 10 s after; keep it above the "
                                 "longest judge chunk",
    "CELERY_BROKER_HEALTH_CHECK_S": "how often workers check their Redis connections; a consumer left stale by a "
                                    "Redis restart reconnects within about twice this",
    "CELERY_LOST_WORK_SWEEP_S": "how often workers also look for judge chunks and release builds whose messages "
                                "the broker lost (besides after each reconnection) and send them again; 0: only "
                                "after reconnections",
    "ASSIGNMENT_TTL_SECONDS": "how long an unsubmitted assignment is held before it returns to the pool",
    "BULK_READ_WORKERS": "PostgreSQL connections one export or report may read with at once, each a range of the "
                         "ratings on one snapshot (default: the cores, at most 4; 1 reads with one query)",
    "REPORT_BACKGROUND_RATINGS": "a study with this many ratings has its report computed by a worker, not in the web "
                                 "request: the page shows a progress bar until it is ready, then the latest report "
                                 "(marked out of date) while a newer one is computed; the API answers 202 with "
                                 "Retry-After meanwhile",
    "SESSION_COOKIE_SECURE": "production only: `0` sends the session cookie over plain http too (do not)",
    "CSRF_COOKIE_SECURE": "production only: `0` sends the CSRF cookie over plain http too (do not)",
    "SECURE_SSL_REDIRECT": "production only: `1` redirects http to https (when no proxy does)",
    "SECURE_HSTS_SECONDS": "production only: HSTS max-age; a promise browsers keep for its whole length, so opt "
                           "in once HTTPS works (e.g. 31536000)",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "production only: HSTS for every subdomain too",
    "SECURE_HSTS_PRELOAD": "production only: ask to be on browsers' HSTS preload list",
    "LOG_LEVEL": "the root logger's level (`DEBUG`, `INFO`, `WARNING`, ...)",
    "PORT": "`make run`: the port of the development server on 127.0.0.1",
    "CONCORD_DEMO_JUDGE_PORT": "`make run`: the port of the demo's fake judge server, which the demo's judges call",
    "CONCORD_DOCS_BUILD": "`make run`: 0 leaves the documentation site as last built; by default it is built again "
                          "in the background when one of its sources changed",
    "CONCORD_DEMO_PASSWORD": "`load_demo`: the demo accounts' password (default: the username followed by `-demo`)",
}


@dataclass
class Variable:
    name: str
    default: str = ""  # the default's source text; "" when none is given
    kind: str = "str"  # django-environ's cast (bool, int, list, ...) or str
    read_in: list[str] = field(default_factory=list)


def _files() -> list[Path]:
    out = []
    for source in SOURCES:
        path = ROOT / source
        found = [path] if path.is_file() else sorted(path.rglob("*.py"))
        out += [p for p in found if not SKIP_PARTS & set(p.relative_to(ROOT).parts)]
    return out


def _is_os_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name) \
        and node.value.id == "os"


def _read(call: ast.Call) -> tuple[str, ast.AST | None, str] | None:
    """(name, default node, kind) when the call reads an environment variable by a literal name."""
    func = call.func
    if not call.args or not isinstance(call.args[0], ast.Constant) or not isinstance(call.args[0].value, str):
        return None
    name = call.args[0].value
    default = next((k.value for k in call.keywords if k.arg == "default"), None)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "env":
        return name, default, func.attr  # django-environ: env.bool("X", default=...)
    if isinstance(func, ast.Name) and func.id == "env":
        return name, default, "str"
    if isinstance(func, ast.Attribute) and func.attr == "get" and _is_os_environ(func.value) or (
            isinstance(func, ast.Attribute) and func.attr == "getenv" and isinstance(func.value, ast.Name)
            and func.value.id == "os"):
        return name, call.args[1] if len(call.args) > 1 else default, "str"
    return None


def reads(tree: ast.AST):
    """(name, default node or None, kind) for each read of an environment variable by a literal name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if (hit := _read(node)) is not None:
                yield hit
        elif isinstance(node, ast.Subscript) and _is_os_environ(node.value) and isinstance(node.ctx, ast.Load) \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            yield node.slice.value, None, "str"


@functools.lru_cache(maxsize=1)  # the source does not change under a running process; parsing it takes seconds
def variables_read() -> dict[str, Variable]:
    found: dict[str, Variable] = {}
    for path in _files():
        rel = str(path.relative_to(ROOT))
        text = path.read_text()
        if not _MAY_READ.search(text):
            continue  # (no read possible: parsing only the files that may read keeps this under a second)
        for name, default, kind in reads(ast.parse(text, filename=rel)):
            var = found.setdefault(name, Variable(name, kind=kind))
            if default is not None and not var.default:
                var.default = ast.unparse(default)
            if kind != "str":
                var.kind = kind
            if rel not in var.read_in:
                var.read_in.append(rel)
    return dict(sorted(found.items()))


def settings_page() -> str:
    """docs/reference/settings.md."""
    lines = [
        "# Settings",
        "",
        "Every environment variable Concord reads, generated from its source: `config/env_reference.py` finds",
        "each read in the code and keeps the meanings; `.venv/bin/python -m config.env_reference` writes this",
        "page, and a test fails when a variable is read but not described or the page is stale. The default",
        "is the code's own expression.",
        "",
        "| variable | type | default | meaning | read in |",
        "|---|---|---|---|---|",
    ]
    for var in variables_read().values():
        default = f"`{_cell(var.default)}`" if var.default else ""
        where = ", ".join(f"`{p}`" for p in var.read_in)
        lines.append(f"| `{var.name}` | {var.kind} | {default} | {_cell(MEANINGS.get(var.name, ''))} | {where} |")
    lines += [
        "",
        "Judge API keys are not settings: each judge names the *environment variable* holding its key",
        "(`api_key_env`) and any other credential header (`backend_options.headers_env`), never the key, and the",
        "workers read it when they call the provider; pages, the API, run files and the admin show such values",
        "masked (`judges/masking.py`).",
        "",
        "In production (`DEBUG`, `CONCORD_LOCAL_SERVING` and `CONCORD_TESTING` unset) session and CSRF cookies are",
        "`Secure`, `X-Frame-Options: DENY`, no-sniff and a strict referrer policy are on; `python manage.py check",
        "--deploy` reports what is left.",
        "",
    ]
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


PAGE = ROOT / "docs" / "reference" / "settings.md"

if __name__ == "__main__":
    PAGE.write_text(settings_page())
    print(f"wrote {PAGE.relative_to(ROOT)}: {len(variables_read())} variables")
