from django.apps import AppConfig


class ConcordConfig(AppConfig):
    """The project package as an app only so that its system checks (config/checks.py) are registered
    for every `manage.py check`, not just where wsgi or Celery happen to import them."""

    name = "config"
    label = "concord"
    verbose_name = "Concord"

    def ready(self) -> None:
        from config import checks  # noqa: F401  (registers the checks)
