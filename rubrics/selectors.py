"""Reads for rubrics: a rubric by slug, stored or built-in, as every command that takes `--rubric` reads it."""

from __future__ import annotations

from django.db import DatabaseError

from .loader import list_presets, load_preset
from .models import Rubric, RubricVersion


class UnknownRubric(LookupError):
    """No stored rubric and no preset by that slug; the message lists the slugs there are."""

    def __init__(self, slug: str, known: list[str]):
        self.slug, self.known = slug, known
        super().__init__(f"unknown rubric {slug!r}; known: {', '.join(known)}")


def rubric_latest_version(slug: str) -> RubricVersion | None:
    """The stored rubric's newest version (the one a new study pins), or None when none is stored."""
    return RubricVersion.objects.filter(rubric__slug=slug).order_by("-version").first()


def rubric_definition(slug: str) -> dict:
    """The definition a rubric slug names: the stored rubric's latest version (an edited preset included),
    else the built-in preset. Without a database (a command run with none to hand) the presets still answer."""
    try:
        version = rubric_latest_version(slug)
        stored = [] if version else list(Rubric.objects.values_list("slug", flat=True))
    except DatabaseError:
        version, stored = None, []
    if version is not None:
        return version.definition
    if slug in list_presets():
        return load_preset(slug)
    raise UnknownRubric(slug, sorted(set(stored) | set(list_presets())))
