"""Judge configurations: create or update from a validated dict or a YAML/JSON file."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from judges.config import parse_judges_text, validate_judge
from judges.models import JudgeConfig


def judge_config_save(*, data: dict[str, Any]) -> tuple[JudgeConfig, bool]:
    """Validate (JudgeConfigError on any problem) and create or update the judge by name."""
    clean = validate_judge(data)
    name = clean.pop("name")
    return JudgeConfig.objects.update_or_create(name=name, defaults=clean)


@transaction.atomic
def judge_configs_load(*, text: str, filename: str = "") -> list[tuple[JudgeConfig, bool]]:
    """Every judge of a file, or none of them."""
    out = []
    for data in parse_judges_text(text, filename=filename):
        name = data.pop("name")
        out.append(JudgeConfig.objects.update_or_create(name=name, defaults=data))
    return out
