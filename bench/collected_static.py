"""STATIC_ROOT as the Dockerfile builds it (`collectstatic`: hashed names, .gz and .br beside each), made once
per content of the static sources and kept under ~/.cache/concord/collected-static/<digest>/ (see _cache_dir).

Compressing Swagger UI's and Redoc's bundles with Brotli took about 46 s of CPU (2026-11-28, 2-core
python-svc machine), 10 s since only the hashed copies are kept and source maps are not compressed
(config/settings.py): the test suite's two workers, the benches and a second run would each pay it again.
The digest covers every file the static finders list, by path and content, and the storage, its settings
and the versions that shape the output, so a changed file collects afresh; a lock lets one process collect while the others wait.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cache_dir() -> Path:
    """Beside the embedded servers where CONCORD_DATA_DIR names a place; otherwise in the user's cache (as
    scripts/ensure-pgbouncer.sh keeps its build), so a new checkout of the same sources, a CI run's clean clone
    among them, finds the collection made by the last one instead of paying the Brotli work again."""
    if os.environ.get("CONCORD_DATA_DIR"):
        return Path(os.environ["CONCORD_DATA_DIR"]) / "collected-static"
    base = os.environ.get("XDG_CACHE_HOME") or (Path(os.environ["HOME"]) / ".cache" if os.environ.get("HOME") else None)
    return Path(base) / "concord" / "collected-static" if base else ROOT / ".data" / "collected-static"


CACHE = _cache_dir()
STORAGE = "whitenoise.storage.CompressedManifestStaticFilesStorage"  # config/settings.py's, outside tests
KEEP = 3  # collections of earlier sources kept beside the current one (other checkouts' branches)


def sources_digest() -> str:
    """sha256 over the static files Django's finders list (path and bytes), the storage, its settings and the
    versions."""
    import django
    from django.conf import settings

    if not settings.configured:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.contrib.staticfiles.finders import get_finders

    shape = (STORAGE, version("django"), version("whitenoise"), settings.WHITENOISE_KEEP_ONLY_HASHED_FILES,
             sorted(settings.WHITENOISE_SKIP_COMPRESS_EXTENSIONS))
    digest = hashlib.sha256(repr(shape).encode())
    found = {}
    for finder in get_finders():
        for path, storage in finder.list(ignore_patterns=["CVS", ".*", "*~"]):
            found.setdefault(path, storage.path(path))  # the first finder wins, as collectstatic's does
    for path in sorted(found):
        digest.update(path.encode() + b"\0" + Path(found[path]).read_bytes() + b"\0")
    return digest.hexdigest()[:20]


@functools.cache
def collected_static_root() -> Path:
    root = CACHE / sources_digest()
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process collecting the same sources: wait for it
        if not (root / "staticfiles.json").exists():
            _collect(root)
            _forget_older(keep=root)
    return root


def _collect(root: Path) -> None:
    partial = Path(tempfile.mkdtemp(prefix=".collecting-", dir=CACHE))
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "CONCORD_TESTING", "DATABASE_URL"}}
    result = subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT,
                            env={**env, "STATIC_ROOT": str(partial)}, capture_output=True, text=True)
    if result.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise RuntimeError("collectstatic failed: " + result.stderr[-3000:])
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)  # whole or not at all: a collection stopped half-way is never taken for done


def _forget_older(*, keep: Path) -> None:
    """Under the lock: a `.collecting-` folder left there is from a process that died collecting."""
    folders = [p for p in CACHE.iterdir() if p.is_dir() and p != keep]
    stale = [p for p in folders if p.name.startswith(".collecting-")]
    older = sorted((p for p in folders if p not in stale), key=lambda p: p.stat().st_mtime)
    for path in stale + older[:-KEEP]:
        shutil.rmtree(path, ignore_errors=True)
