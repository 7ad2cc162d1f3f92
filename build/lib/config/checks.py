from django.conf import settings
from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured

MESSAGE = "SECRET_KEY must be set in the environment (or DEBUG=1 for development)."


def require_secret_key() -> None:
    """Called where Concord serves requests or runs jobs (wsgi, Celery worker)."""
    if getattr(settings, "SECRET_KEY_MISSING", False) and not (settings.DEBUG or settings.TESTING):
        raise ImproperlyConfigured(MESSAGE)


@register(deploy=True)
def secret_key_check(app_configs, **kwargs):
    if getattr(settings, "SECRET_KEY_MISSING", False) and not settings.DEBUG:
        return [Error(MESSAGE, id="concord.E001")]
    return []
