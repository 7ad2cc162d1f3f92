from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation import api_tokens

        api_tokens.connect()  # a new password or a deactivation revokes the account's API tokens
