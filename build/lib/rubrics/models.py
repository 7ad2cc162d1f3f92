from django.conf import settings
from django.db import models


class Rubric(models.Model):
    """A named rubric; its content lives in immutable versions."""

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    is_preset = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name

    @property
    def latest_version(self) -> "RubricVersion | None":
        return self.versions.order_by("-version").first()


class RubricVersion(models.Model):
    """One immutable version of a rubric: the validated definition (see docs/rubric-format.md).

    A study pins a version, so what raters and judges were asked never changes under them;
    editing a rubric creates the next version.
    """

    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    definition = models.JSONField()
    checksum = models.CharField(max_length=64)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["rubric__slug", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["rubric", "version"], name="rubric_version_unique"),
            models.UniqueConstraint(fields=["rubric", "checksum"], name="rubric_checksum_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.rubric.slug} v{self.version}"

    @property
    def criteria(self) -> list[dict]:
        return self.definition["criteria"]

    def criterion(self, key: str) -> dict:
        for criterion in self.criteria:
            if criterion["key"] == key:
                return criterion
        raise KeyError(key)
