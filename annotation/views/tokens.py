"""An account's API tokens: the owner's page (list, create, revoke) and the same through the API."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.access import may_hold_api_token
from annotation.api_tokens import TokenError, api_token_create, api_token_revoke, api_tokens_of


def _owner(user) -> None:
    if not may_hold_api_token(user):
        raise PermissionDenied("Crowd participants hold no API tokens.")


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens_page(request: HttpRequest) -> HttpResponse:
    _owner(request.user)
    context, status = {}, 200
    if request.method == "POST":
        try:
            if "revoke" in request.POST:
                context["revoked"] = api_token_revoke(user=request.user, prefix=request.POST["revoke"])
            else:
                context["new_key"] = api_token_create(user=request.user).key  # shown this once
        except TokenError as exc:
            context["error"], status = str(exc), 400
    context.update(tokens=api_tokens_of(request.user), days=settings.API_TOKEN_DAYS)
    return render(request, "annotation/api_tokens.html", context, status=status)


def _listed(user) -> list[dict]:
    return [{"prefix": t.prefix, "created": t.created, "expires": t.expires, "expired": t.expired}
            for t in api_tokens_of(user)]


@extend_schema(responses={200: {"type": "array", "items": {"type": "object"}}, 403: {"type": "object"}})
@api_view(["GET"])
def api_tokens(request: Request) -> Response:
    """The caller's API tokens: a prefix of each (never the key), when it was made and when it expires."""
    _owner(request.user)
    return Response(_listed(request.user))


@extend_schema(responses={200: {"type": "object"}, 400: {"type": "object"}, 403: {"type": "object"},
                          404: {"type": "object"}})
@api_view(["DELETE"])
def api_token_revoke_view(request: Request, prefix: str) -> Response:
    """Revoke the caller's token that starts with `prefix` (the list's); 404 when they have none such."""
    _owner(request.user)
    try:
        revoked = api_token_revoke(user=request.user, prefix=prefix)
    except TokenError as exc:
        return Response({"detail": str(exc)}, status=400)
    if not revoked:
        return Response({"detail": "no token of yours starts with this prefix"}, status=404)
    return Response({"revoked": revoked})
