"""Error pages: API clients get JSON, browsers get our HTML page with the site's navigation."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader

logger = logging.getLogger(__name__)


def _wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return render(request, "404.html", {"request_path": request.path}, status=404)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse({"detail": "You do not have permission to perform this action."}, status=403)
    return render(request, "403.html", status=403)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if isinstance(exception, RequestDataTooBig):  # config/limits.py's request.body: say which limit
        return too_large(request, f"request body: at most {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes besides "
                                  "uploaded files")
    if _wants_json(request):
        return JsonResponse({"detail": "Bad request."}, status=400)
    return render(request, "400.html", status=400)


def too_large(request: HttpRequest, message: str) -> HttpResponse:
    """413 naming the limit (config/limits.py)."""
    if _wants_json(request):
        return JsonResponse({"detail": message}, status=413)
    return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")


class UploadSizeMiddleware:
    """A request carrying files is refused by its Content-Length before Django reads (and spools to
    disk) its body: the table's request.upload. Each file's own limit is checked where it is used."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from config.limits import limit

        if request.META.get("CONTENT_TYPE", "").startswith("multipart/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > (most := limit("request.upload")):
                return too_large(request, f"upload: at most {most:,} bytes in one request (this has {length:,})")
        return self.get_response(request)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW. The REST API checks CSRF itself (DRF's SessionAuthentication), so this is a form
    posted from a page that was open too long, or from another site."""
    if _wants_json(request):
        return JsonResponse({"detail": f"CSRF failed: {reason}"}, status=403)
    return render(request, "403_csrf.html", status=403)


def server_error(request: HttpRequest) -> HttpResponse:
    """Rendered with no request context: whatever failed (the database, a context processor, the session)
    may fail again. If even the template fails, a plain line is better than a second traceback."""
    if _wants_json(request):
        return JsonResponse({"detail": "Server error."}, status=500)
    try:
        body = loader.get_template("500.html").render()
    except Exception:
        logger.exception("the 500 page itself failed to render")
        return HttpResponseServerError("Server error. Concord has logged it; try again in a moment.",
                                       content_type="text/plain")
    return HttpResponseServerError(body)


class DatabaseUnavailableMiddleware:
    """A request that fails because PostgreSQL is unreachable (restarting, failing over) gets 503 with
    Retry-After, not a 500: clients and load balancers know to retry a 503. The transaction was rolled
    back, so a retry stores the work once."""

    RETRY_AFTER_S = 2

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        logger.warning("database unavailable for %s %s: %s", request.method, request.path, exception)
        if _wants_json(request):
            response: HttpResponse = JsonResponse({"detail": "The database is unavailable; retry shortly."},
                                                  status=503)
        else:
            response = HttpResponse("Concord cannot reach its database right now. Retry in a moment.",
                                    status=503, content_type="text/plain")
        response["Retry-After"] = str(self.RETRY_AFTER_S)
        return response
