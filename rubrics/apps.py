from django.apps import AppConfig
from django.db import DEFAULT_DB_ALIAS
from django.db.models.signals import post_migrate


def install_presets_after_migrate(sender, *, using=DEFAULT_DB_ALIAS, plan=None, **kwargs) -> None:
    """`migrate` installs the built-in presets (or their new versions), so a site deployed with `migrate` alone
    offers them on the new-study page and to the API's clients. Not after a `flush` (which sends no plan), nor
    after a migration backwards, where the models may be ahead of the tables."""
    if using != DEFAULT_DB_ALIAS or plan is None or any(backwards for _, backwards in plan):
        return
    from .services import rubric_presets_install

    rubric_presets_install()


class RubricsConfig(AppConfig):
    name = "rubrics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(install_presets_after_migrate, sender=self,
                             dispatch_uid="rubrics.install_presets_after_migrate")
