import os

from django.conf import settings
from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured

MESSAGE = "SECRET_KEY must be set in the environment (or CONCORD_LOCAL_SERVING=1 for development)."


def require_secret_key() -> None:
    """Called where Concord serves requests or runs jobs (wsgi, Celery worker)."""
    if getattr(settings, "SECRET_KEY_MISSING", False) and not (settings.LOCAL_SERVING or settings.TESTING):
        raise ImproperlyConfigured(MESSAGE)


@register(deploy=True)
def secret_key_check(app_configs, **kwargs):
    if getattr(settings, "SECRET_KEY_MISSING", False) and not settings.LOCAL_SERVING:
        return [Error(MESSAGE, id="concord.E001")]
    return []



@register(deploy=True)
def static_files_collected_check(app_configs, **kwargs):
    """Without DEBUG every page links the hashed names from collectstatic's manifest; with no manifest in
    STATIC_ROOT every page would be a 500."""
    from django.contrib.staticfiles.storage import ManifestFilesMixin
    from django.core.files.storage import storages

    storage = storages["staticfiles"]
    if settings.DEBUG or not isinstance(storage, ManifestFilesMixin) or storage.exists(storage.manifest_name):
        return []
    return [Error(f"No static files manifest in STATIC_ROOT ({settings.STATIC_ROOT}): run `python manage.py "
                  "collectstatic --noinput` (the Dockerfile does it at build).", id="concord.E002")]


# Variables that once set a bound the table of limits now keeps (config/limits.py): a deployment that still
# sets one would see its value quietly ignored.
RETIRED_FOR_LIMITS = {"OTLP_MAX_BODY_BYTES": "otlp.body", "OTLP_MAX_SPANS": "otlp.spans",
                      "OTLP_REQUESTS_PER_MINUTE": "otlp.per_token_per_minute"}


@register(deploy=True)
def retired_limit_variables_check(app_configs, **kwargs):
    return [Error(f"{name} is no longer read: set the limit {key!r} in CONCORD_LIMITS instead, e.g. "
                  f"CONCORD_LIMITS='{{\"{key}\": {os.environ[name]}}}'", id="concord.E003")
            for name, key in RETIRED_FOR_LIMITS.items() if name in os.environ]
