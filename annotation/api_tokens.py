"""API tokens (DRF's authtoken, one per account): they expire, their owner lists, creates and revokes them,
and they are revoked when the account's password changes or the account is deactivated.

    api_token_create(user=...) -> Token        # replaces the account's token; its key is shown once
    api_tokens_of(user) -> list[TokenInfo]     # what the owner sees: a prefix, created, expires
    api_token_revoke(user=..., prefix=...) -> int
    ExpiringTokenAuthentication                # DRF's TokenAuthentication, refusing a token past API_TOKEN_DAYS

Crowd participants hold no token: their browser is their credential (annotation.services.crowd).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import pre_save
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from annotation.access import is_crowd_participant

PREFIX_LENGTH = 8  # enough to tell an owner's tokens apart, far from enough to use one


class TokenError(ValueError):
    pass


@dataclass(frozen=True)
class TokenInfo:
    prefix: str
    created: datetime
    expires: datetime

    @property
    def expired(self) -> bool:
        return self.expires <= timezone.now()


def token_expires(token: Token) -> datetime:
    return token.created + timedelta(days=settings.API_TOKEN_DAYS)


def api_tokens_of(user) -> list[TokenInfo]:
    return [TokenInfo(t.key[:PREFIX_LENGTH], t.created, token_expires(t)) for t in Token.objects.filter(user=user)]


@transaction.atomic
def api_token_create(*, user) -> Token:
    """A new token for `user`, replacing the one they had (DRF keeps one per account)."""
    if is_crowd_participant(user):
        raise TokenError("crowd participants hold no API tokens")
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)


def api_token_revoke(*, user, prefix: str) -> int:
    """Revoke the owner's token that starts with `prefix`; another account's token is never matched."""
    if len(prefix) < PREFIX_LENGTH:
        raise TokenError(f"prefix: the first {PREFIX_LENGTH} characters of the token, as the list shows them")
    deleted, _ = Token.objects.filter(user=user, key__startswith=prefix).delete()
    return deleted


class ExpiringTokenAuthentication(TokenAuthentication):
    """DRF's token authentication; a token older than API_TOKEN_DAYS is refused (401), saying so."""

    def authenticate_credentials(self, key):
        user, token = super().authenticate_credentials(key)
        if token_expires(token) <= timezone.now():
            raise AuthenticationFailed("This API token has expired; create a new one on your account's API "
                                       "tokens page (/account/tokens/).")
        return user, token


def _revoke_on_credential_change(sender, instance, update_fields=None, **kwargs) -> None:
    """A new password or a deactivation ends the account's API tokens, as Django's password hash ends its
    sessions. Compared with the stored row, so that every way of saving (set_password, the admin, a
    management command) is covered; a save of other fields (last_login at each sign-in) asks nothing."""
    if instance.pk is None or (update_fields is not None and not {"password", "is_active"} & set(update_fields)):
        return
    stored = type(instance).objects.filter(pk=instance.pk).values_list("password", "is_active").first()
    if stored is not None and (stored[0] != instance.password or not instance.is_active):
        Token.objects.filter(user_id=instance.pk).delete()


def connect() -> None:
    pre_save.connect(_revoke_on_credential_change, sender=get_user_model(), dispatch_uid="api-token-revoke")
