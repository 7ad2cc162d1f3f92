"""Error pages: API clients get JSON, browsers get the HTML page."""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

logger = logging.getLogger(__name__)


def _wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse({"detail": "Server error."}, status=500)
    return defaults.server_error(request)


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
