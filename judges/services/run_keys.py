"""A judge run's key: what made its scores, as the provider sees it. The endpoint (the API root
the requests go to), the key's variable and the judge's own headers (which account asks), model,
backend, prompt (a hash of the rendered templates), sampling, method (with an ensemble's members
and its weights, escalation's experts) and rubric version. Two runs with one key would ask the
same server the same questions the same way, so the second reuses the first's scores (and says
from which run); a run whose key differs is new, and the judges page says what differs.

The judge's name, its queue, concurrency, prices, timeouts and chunk sizes are left out: they
change where and how fast a run goes, not what the model answers.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Sequence

from judges.masking import mask_url
from judges.plan import SENTINEL_ITEM, JudgePlan  # noqa: F401 -- SENTINEL_ITEM re-exported
from judges.providers import GENERIC, get_provider, settings_from_judge

TRANSPORT_OPTIONS = {"timeout_s", "connect_timeout_s", "max_retries", "backoff_base_s", "backoff_max_s",
                     "retry_after_max_s", "headers", "headers_env", "batch_size", "device"}
PLATFORM_METHOD_OPTIONS = {"chunk_size", "task_max_retries", "task_retry_backoff_s", "use_cache", "max_cost_usd",
                           "rpm", "tpm", "tokenizer", "batch", "batch_api", "batch_discount", "batch_poll_s",
                           "batch_max_attempts"}
LABELS = {"endpoint": "endpoint", "credentials": "key", "model": "model", "backend": "backend", "prompt": "prompt",
          "sampling": "sampling", "method": "method", "rubric_version": "rubric version"}


def _digest(value: Any) -> str:
    blob = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def run_key_parts(config: Mapping[str, Any] | JudgePlan, rubric: Mapping[str, Any], criteria: Sequence[str],
                  rubric_version_id: int) -> dict[str, Any]:
    """The parts of the key, each small enough to show and compare (`config`: the plan or its dict)."""
    plan = JudgePlan.of(config, rubric)
    config = plan.config
    backend_options = {k: v for k, v in (config.get("backend_options") or {}).items() if k not in TRANSPORT_OPTIONS}
    method_options = {k: v for k, v in (config.get("method_options") or {}).items()
                      if k not in PLATFORM_METHOD_OPTIONS}
    stages = [run_key_parts(stage, rubric, criteria, rubric_version_id) for stage in plan.stages[1:]]
    members = [run_key_parts(m, rubric, criteria, rubric_version_id) for m in plan.members]
    backend = {"name": config.get("backend"), "mode": config.get("mode", "generate"), "options": backend_options}
    method = {"name": config.get("method"), "options": method_options, "criteria": list(criteria),
              "stages": [_digest(s)[:16] for s in stages]}
    if members:
        method["members"] = [_digest(m)[:16] for m in members]
    if config.get("ensemble_weights"):
        method["weights"] = list(config["ensemble_weights"])
    # the provider and structured output change the requests; left out at their defaults so the keys
    # of runs made before they existed stay the same
    if config.get("provider") not in (None, "", GENERIC):
        backend["provider"] = config["provider"]
    if config.get("structured_output"):
        method["structured_output"] = True
    return {
        "endpoint": api_endpoint(config),
        "credentials": credentials(config),
        "model": config.get("model", ""),
        "backend": backend,
        "prompt": _digest(plan.templates(criteria))[:16],
        "sampling": dict(config.get("sampling") or {}),
        "method": method,
        "rubric_version": rubric_version_id,
    }


def api_endpoint(config: Mapping[str, Any]) -> str:
    """Where the requests go: the API root the provider builds from the endpoint (its default for a
    hosted provider named without one), so `http://h` and `http://h/v1/` are one server."""
    if config.get("backend") != "openai":
        return ""
    settings = settings_from_judge(config)
    root = get_provider(settings.provider).models_url(settings).removesuffix("/models")
    shown = mask_url(root)  # the parts are shown: a password in the URL is kept as a digest only
    return shown if shown == root else f"{shown}#{_digest(root)[:12]}"


def credentials(config: Mapping[str, Any]) -> dict[str, Any]:
    """Who asks, by reference: the key's variable, the variables of secret headers, and a digest of
    literal headers (an organisation or project header picks another account)."""
    opts = config.get("backend_options") or {}
    out: dict[str, Any] = {"key_env": config.get("api_key_env") or ""}
    if opts.get("headers_env"):
        out["headers_env"] = dict(sorted(opts["headers_env"].items()))
    if opts.get("headers"):
        out["headers"] = _digest(opts["headers"])[:16]
    return out


def run_key(parts: Mapping[str, Any]) -> str:
    return _digest(parts)


def key_differences(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[str]:
    """What differs between two runs' key parts, in words ('model', 'prompt', ...)."""
    if not a or not b:
        return []
    return [LABELS.get(k, k) for k in LABELS if a.get(k) != b.get(k)]
