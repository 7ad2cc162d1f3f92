"""/docs/: the documentation site that MkDocs builds (`make docs` -> site/), served by Concord itself to
signed-in users but crowd participants, so that a deployed instance's users read the documentation of the
version it runs.
Only the built files are served (nothing of any study); a site not built yet gets a page that says how."""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import re
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, SuspiciousFileOperation
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils._os import safe_join
from django.views.decorators.http import require_safe

from annotation.access import may_read_docs


_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.S | re.I)


@lru_cache(maxsize=512)
def _hashes(path: Path, mtime_ns: int) -> tuple[str, ...]:
    return tuple(sorted({"'sha256-" + base64.b64encode(hashlib.sha256(body).digest()).decode() + "'"
                         for body in _INLINE_SCRIPT.findall(path.read_bytes())}))


def inline_script_hashes(path: Path) -> list[str]:
    """The CSP source of each inline script of a built page (read once per version of the file)."""
    return list(_hashes(path, path.stat().st_mtime_ns))


def site_dir() -> Path:
    """Where mkdocs.yml's site_dir puts the build; DOCS_SITE_DIR overrides it (tests, other layouts)."""
    return Path(getattr(settings, "DOCS_SITE_DIR", Path(settings.BASE_DIR) / "site"))


@login_required
@require_safe
def docs_file(request: HttpRequest, name: str = "") -> HttpResponse:
    if not may_read_docs(request.user):
        raise PermissionDenied("The documentation is for the study's team, not its crowd participants.")
    root = site_dir()
    if not (root / "index.html").is_file():
        return render(request, "docs_not_built.html", status=404)
    try:
        target = Path(safe_join(root, name))
    except SuspiciousFileOperation:
        raise Http404("No documentation page at this address.") from None
    if target.is_dir():
        if name and not name.endswith("/"):
            # The site's links are relative to a page's folder: /docs/how-to/deploy must become .../deploy/.
            return HttpResponseRedirect(request.path + "/")
        target = target / "index.html"
    if not target.is_file():
        raise Http404("No documentation page at this address.")
    content_type, encoding = mimetypes.guess_type(target.name)
    response = FileResponse(target.open("rb"), content_type=content_type or "application/octet-stream")
    if target.suffix == ".html":
        # The theme's pages carry small inline scripts of their own: allowed by their hashes, not wholesale.
        response._csp_update = {"script-src": inline_script_hashes(target)}
    if encoding:
        response.headers["Content-Encoding"] = encoding  # e.g. sitemap.xml.gz, served as the file it is
    return response
