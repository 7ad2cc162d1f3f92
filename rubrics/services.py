"""Writes for rubrics: add a rubric or its next version, install the seed presets."""

from django.db import transaction

from .loader import list_presets, load_preset, rubric_checksum, validate_rubric
from .models import Rubric, RubricVersion
from .selectors import UnknownRubric, rubric_latest_version


def rubric_version_create(*, data: dict, user=None, is_preset: bool = False) -> tuple[RubricVersion, bool]:
    """Validate `data` and store it as the rubric's next version.

    Returns (version, created). An unchanged definition returns the existing version, so
    loading the same file twice is a no-op. Raises rubrics.loader.RubricError on bad input,
    before anything is written.
    """
    return _version_store(validate_rubric(data), user=user, is_preset=is_preset)


@transaction.atomic
def _version_store(definition: dict, *, user=None, is_preset: bool = False) -> tuple[RubricVersion, bool]:
    """Store a validated, normalised definition as the rubric's next version, unless it is the same as one."""
    checksum = rubric_checksum(definition)
    rubric, _ = Rubric.objects.select_for_update().get_or_create(
        slug=definition["slug"], defaults={"name": definition["name"], "is_preset": is_preset}
    )
    existing = rubric.versions.filter(checksum=checksum).first()
    if existing is not None:
        return existing, False
    if rubric.name != definition["name"]:
        rubric.name = definition["name"]
        rubric.save(update_fields=["name"])
    latest = rubric.versions.order_by("-version").values_list("version", flat=True).first() or 0
    version = RubricVersion.objects.create(
        rubric=rubric, version=latest + 1, definition=definition, checksum=checksum, created_by=user
    )
    return version, True


def rubric_preset_install(slug: str) -> RubricVersion:
    """Install (or version) the built-in preset `slug`: load_preset has validated it (and keeps it parsed)."""
    return _version_store(load_preset(slug), is_preset=True)[0]


def rubric_presets_install() -> list[RubricVersion]:
    """Install (or version) every built-in preset; idempotent."""
    return [rubric_preset_install(slug) for slug in list_presets()]


def rubric_version_for_slug(slug: str) -> RubricVersion:
    """The version a new study on rubric `slug` pins: the stored rubric's latest version, else the built-in
    preset of that slug, installed now. Raises rubrics.selectors.UnknownRubric."""
    version = rubric_latest_version(slug)
    if version is not None:
        return version
    if slug in list_presets():
        return rubric_preset_install(slug)
    stored = Rubric.objects.values_list("slug", flat=True)
    raise UnknownRubric(slug, sorted(set(stored) | set(list_presets())))
