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


def ensemble_config_save(*, members: list[str], weights: list[float] | str | None = None) -> JudgeConfig:
    """The coordinator judge of a weighted ensemble of named judges (seed 003's `--ensemble
    weighted`), created or updated as `ensemble-<member>-<member>...`. It takes the first
    member's backend settings (it sends nothing itself) and a label method that can vote."""
    from judges.config import ENSEMBLE_METHODS, JudgeConfigError

    found = {j.name: j for j in JudgeConfig.objects.filter(name__in=members)}
    missing = [m for m in members if m not in found]
    if missing:
        raise JudgeConfigError([("members", f"no judge named {', '.join(missing)}")])
    first = found[members[0]]
    name = ("ensemble-" + "-".join(members))[:100].rstrip("-_")
    data = {f: getattr(first, f) for f in ("provider", "backend", "model", "endpoint", "api_key_env", "queue",
                                            "sampling", "concurrency", "backend_options")}
    data.update(name=name, description=f"weighted ensemble of {', '.join(members)}",
                method=first.method if first.method in ENSEMBLE_METHODS else "label",
                method_options={"ensemble": "weighted", "members": list(members),
                                **({"weights": weights} if weights is not None else {})})
    judge, _ = judge_config_save(data=data)
    return judge
