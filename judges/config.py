"""Judge configuration from YAML/JSON: parse, validate whole, normalise. Pure (no Django).

    name: aqua-mini                    # [a-z0-9_-]+, unique
    provider: openai                   # openai | anthropic | google | vllm | sglang | llamacpp | ollama | tgi
                                       # | openai-compatible (the default of backend: openai); see docs/judges.md
    backend: openai                    # openai (any HTTP provider; implied by provider) | transformers (local)
    model: gpt-4o-mini
    endpoint: https://api.openai.com/v1   # HTTP only; hosted providers have a default
    api_key_env: OPENAI_API_KEY        # the NAME of the variable holding the key, never the key
    structured_output: false           # true: the answer is held to a JSON schema built from the rubric
    method: label                      # see METHODS (label = seed 003 baseline, legacy = baseline-v0;
                                       # pairwise, ranking, best_worst compare an item's outputs)
    mode: generate                     # generate | logprobs (logprobs = G-Eval)
    criteria: [label]                  # optional; default every judgeable criterion
    sampling: {temperature: 0, max_tokens: 256, seed: 7}   # + reasoning_effort, reasoning_tokens
    concurrency: 16
    price_in_per_m: 0.15               # USD per 1M input tokens
    price_out_per_m: 0.60
    queue: judges                      # Celery queue (one per GPU node, say)
    prompt_overrides: {}               # named template pieces of judges.prompts
    backend_options: {timeout_s: 60, max_retries: 5}   # headers_env: {X-Gateway-Key: JUDGE_GATEWAY_KEY} sends a
                                       # credential header by reference; literal headers: public ones only
    method_options: {chunk_size: 16}   # per_criterion/all_in_one: steps: calls|structured asks a rubric's
                                       # per-step criteria on trajectories one call per step or one per criterion
    # seed 003: escalation takes router: deterministic|llm (router_two_calls: true forces the
    # two-call fallback); label/legacy/modular take ensemble: weighted, members: [names of the
    # voting judges], weights: [one per member] | gold

A file holds one judge, or several under `judges:`. Errors are collected for the whole
file and name the field, e.g. `judges[1].sampling.temperature: must be between 0 and 2`.
"""

from __future__ import annotations

import re
from typing import Any, Iterable
from urllib.parse import parse_qsl, urlsplit

import yaml

from judges.egress import endpoint_problem, key_variable_problem
from config.limits import text_problem
from judges.masking import PUBLIC_HEADERS, is_secret_header, is_secret_name
from judges.prompts.base import known_overrides
from judges.providers import GENERIC, NAMES as PROVIDERS, canonical, check_judge, get_provider
from judges.providers.openai import EFFORTS as REASONING_EFFORTS
from rubrics.yaml_bounded import yaml_load

BACKENDS = ("openai", "transformers")
MODES = ("generate", "logprobs")
METHOD_NAMES = ("all_in_one", "per_criterion", "label", "legacy", "modular", "escalation", "pairwise", "ranking",
                "best_worst", "geval", "self_consistency")
ITEM_LEVEL_METHODS = ("pairwise", "ranking", "best_worst")  # compare an item's outputs: item-level slots
LABEL_METHODS = ("label", "legacy", "modular", "escalation")  # one label per output
ENSEMBLE_METHODS = ("label", "legacy", "modular")  # may vote with other judges (ensemble: weighted)
ENSEMBLES = ("weighted",)
ROUTERS = ("deterministic", "llm")
# Per-step criteria on trajectory outputs: one call per step, or one structured call per criterion
STEP_MODES = ("calls", "structured")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")
ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
URL_SECRET_PARAMS = frozenset({"key", "sig", "code", "pwd", "pass", "auth", "jwt", "sas", "se", "sp", "sv"})
QUEUE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,60}$")

# Backend settings a judge may pass through (the rest are set from the judge's own fields).
OPENAI_OPTIONS = {"timeout_s": float, "connect_timeout_s": float, "max_retries": int, "backoff_base_s": float,
                  "backoff_max_s": float, "retry_after_max_s": float, "supports_json_schema": bool,
                  "supports_seed": bool, "extra_body": dict, "headers": dict, "headers_env": dict,
                  "reasoning_model": bool}
TRANSFORMERS_OPTIONS = {"batch_size": int, "max_batch_tokens": int, "dtype": str, "device": str,
                        "trust_remote_code": bool, "max_input_tokens": int}
SAMPLING = {"temperature": (float, 0.0, 2.0), "top_p": (float, 0.0, 1.0), "max_tokens": (int, 1, 32768),
            "seed": (int, 0, 2**31 - 1), "reasoning_tokens": (int, 0, 200_000)}
# Budget and rate limits (judges.services.budget, judges.ratelimit, judges.services.estimate): a cap in USD per
# run, requests and tokens per minute shared by every worker, a local tokenizer for the estimate.
BUDGET_OPTIONS = {"max_cost_usd": float, "rpm": int, "tpm": int, "tokenizer": str}
# Provider batch APIs (judges.batch): batch: true sends the run's requests as batches at batch prices.
BATCH_OPTIONS = {"batch": bool, "batch_api": str, "batch_discount": float, "batch_poll_s": float,
                 "batch_max_attempts": int}
BATCH_APIS = ("openai", "anthropic")
# Options every method understands (platform side), then per method (the method's keyword arguments).
COMMON_METHOD_OPTIONS = {"chunk_size": int, "task_max_retries": int, "task_retry_backoff_s": float,
                         "use_cache": bool, "output_format": str, "use_json_schema": bool, **BUDGET_OPTIONS,
                         **BATCH_OPTIONS}
ENSEMBLE_OPTIONS = {"ensemble": str, "members": list, "weights": object}
METHOD_OPTIONS: dict[str, dict[str, type]] = {
    "all_in_one": {"steps": str},
    "per_criterion": {"steps": str},
    "label": {"key": str},
    "legacy": {"key": str},
    "modular": {"key": str, "rules": list},
    "escalation": {"key": str, "experts": list, "escalate_labels": list, "escalate_flags": list,
                   "long_rewrite_tokens": int, "router": str, "router_two_calls": bool},
    "pairwise": {"key": str},
    # key: a ranking (best_worst) criterion of the rubric, default its first one, else overall quality
    "ranking": {"key": str, "swap": bool},
    "best_worst": {"key": str, "tuple_size": int},  # tuple_size: default the criterion's, else 4
    "geval": {"top_logprobs": int},
    "self_consistency": {"samples": int, "temperature": float, "separate_requests": bool},
}
FIELDS = ("name", "description", "provider", "backend", "model", "endpoint", "api_key_env", "method", "mode",
          "criteria", "sampling", "concurrency", "price_in_per_m", "price_out_per_m", "queue", "prompt_overrides",
          "backend_options", "method_options", "structured_output")
DEFAULTS: dict[str, Any] = {"description": "", "endpoint": "", "api_key_env": "", "method": "per_criterion",
                            "mode": "generate", "criteria": [], "sampling": {}, "concurrency": 8,
                            "price_in_per_m": 0.0, "price_out_per_m": 0.0, "queue": "judges",
                            "prompt_overrides": {}, "backend_options": {}, "method_options": {},
                            "provider": "", "structured_output": False}


class JudgeConfigError(ValueError):
    """All problems of one file: a list of (field path, message)."""

    def __init__(self, errors: Iterable[tuple[str, str]]):
        self.errors = list(errors)
        super().__init__("; ".join(f"{p}: {m}" if p else m for p, m in self.errors))


def _typed(value: Any, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _check_options(opts: Any, allowed: dict[str, type], path: str, errors: list[tuple[str, str]]) -> None:
    if not isinstance(opts, dict):
        errors.append((path, "must be a mapping"))
        return
    for key, value in opts.items():
        if key not in allowed:
            errors.append((f"{path}.{key}", f"unknown option (allowed: {', '.join(sorted(allowed)) or 'none'})"))
        elif not _typed(value, allowed[key]):
            errors.append((f"{path}.{key}", f"must be {allowed[key].__name__}"))


def validate_judge(data: Any, path: str = "") -> dict[str, Any]:
    """A normalised judge dict with every field set; JudgeConfigError listing every problem."""
    p = (lambda f: f"{path}.{f}" if path else f)
    errors: list[tuple[str, str]] = []
    if not isinstance(data, dict):
        raise JudgeConfigError([(path, "a judge must be a mapping")])
    if "api_key" in data:
        errors.append((p("api_key"), "never put a key in the file: set api_key_env to the NAME of the environment variable that holds it"))
    unknown = sorted(set(data) - set(FIELDS) - {"api_key"})
    errors += [(p(k), "unknown field") for k in unknown]
    out = {**DEFAULTS, **{k: v for k, v in data.items() if k in FIELDS}}
    out["sampling"] = dict(out["sampling"] or {}) if isinstance(out["sampling"], dict) else out["sampling"]

    _provider(data, out, p, errors)
    name = out.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        errors.append((p("name"), "required: lowercase letters, digits, '-' or '_' (at most 100)"))
    if out.get("backend") not in BACKENDS:
        errors.append((p("backend"), f"must be one of {', '.join(BACKENDS)}"))
    if not isinstance(out.get("model"), str) or not out.get("model", "").strip():
        errors.append((p("model"), "required"))
    if not isinstance(out["description"], str):
        errors.append((p("description"), "must be text"))
    elif problem := text_problem("judge.description", out["description"]):
        errors.append((p("description"), problem.partition(": ")[2]))
    if out.get("backend") == "openai":
        ep = out["endpoint"]
        if not isinstance(ep, str) or not re.match(r"^https?://[^\s/]+", ep or ""):
            errors.append((p("endpoint"), f"an http(s) URL is required for provider {out['provider']} "
                                          f"(the server's base URL, e.g. http://127.0.0.1:8001/v1)"))
        else:
            errors += [(p("endpoint"), m) for m in _endpoint_problems(ep)]
    elif out["endpoint"]:
        errors.append((p("endpoint"), "only the openai backend takes an endpoint"))
    if out["api_key_env"] and (not isinstance(out["api_key_env"], str) or not ENV_RE.match(out["api_key_env"])):
        errors.append((p("api_key_env"), "must be an environment variable NAME such as OPENAI_API_KEY"))
    elif isinstance(out["api_key_env"], str) and out["api_key_env"].startswith(("sk-", "hf_")):
        errors.append((p("api_key_env"), "looks like a key; give the NAME of the variable instead"))
    elif out["api_key_env"] and (problem := key_variable_problem(out["api_key_env"])):
        errors.append((p("api_key_env"), problem))

    # method and mode: logprobs scoring is the G-Eval method
    if "method" not in data and data.get("mode") == "logprobs":
        out["method"] = "geval"
    if out["method"] == "geval" and "mode" not in data:
        out["mode"] = "logprobs"
    if out["method"] not in METHOD_NAMES:
        errors.append((p("method"), f"must be one of {', '.join(METHOD_NAMES)}"))
    if out["mode"] not in MODES:
        errors.append((p("mode"), f"must be one of {', '.join(MODES)}"))
    elif (out["mode"] == "logprobs") != (out["method"] == "geval"):
        errors.append((p("mode"), "logprobs mode goes with method geval (and geval with logprobs)"))

    crits = out["criteria"]
    if not isinstance(crits, list) or not all(isinstance(c, str) and c for c in crits):
        errors.append((p("criteria"), "must be a list of criterion keys"))

    sampling = out["sampling"]
    if not isinstance(sampling, dict):
        errors.append((p("sampling"), "must be a mapping"))
    else:
        for key, value in sampling.items():
            if key == "reasoning_effort":
                if value not in REASONING_EFFORTS:
                    errors.append((p("sampling.reasoning_effort"), f"must be one of {', '.join(REASONING_EFFORTS)}"))
                continue
            if key not in SAMPLING:
                errors.append((p(f"sampling.{key}"), f"unknown (allowed: {', '.join(SAMPLING)}, reasoning_effort)"))
                continue
            kind, lo, hi = SAMPLING[key]
            if key == "seed" and value is None:
                continue
            if not _typed(value, kind) or not (lo <= value <= hi):
                errors.append((p(f"sampling.{key}"), f"must be {kind.__name__} between {lo} and {hi}"))

    conc = out["concurrency"]
    if not _typed(conc, int) or not (1 <= conc <= 1024):
        errors.append((p("concurrency"), "must be an integer from 1 to 1024"))
    for f in ("price_in_per_m", "price_out_per_m"):
        if not _typed(out[f], float) or out[f] < 0:
            errors.append((p(f), "must be a number >= 0 (USD per 1M tokens)"))
        else:
            out[f] = float(out[f])
    if not isinstance(out["queue"], str) or not QUEUE_RE.match(out["queue"]):
        errors.append((p("queue"), "must be a queue name (letters, digits, '_', '-', '.')"))
    po = out["prompt_overrides"]
    if not isinstance(po, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in po.items()):
        errors.append((p("prompt_overrides"), "must map template names to text"))
    elif unknown := sorted(set(po) - set(known_overrides())):
        errors.append((p("prompt_overrides"), f"unknown template name(s) {', '.join(map(repr, unknown))}; "
                                              f"known: {', '.join(known_overrides())}"))

    backend_allowed = OPENAI_OPTIONS if out.get("backend") == "openai" else TRANSFORMERS_OPTIONS
    _check_options(out["backend_options"], backend_allowed, p("backend_options"), errors)
    if isinstance(out["backend_options"], dict):
        _check_credentials(out["backend_options"], p, errors)
    method_allowed = {**COMMON_METHOD_OPTIONS, **METHOD_OPTIONS.get(out["method"], {}),
                      **(ENSEMBLE_OPTIONS if out["method"] in ENSEMBLE_METHODS else {})}
    _check_options(out["method_options"], method_allowed, p("method_options"), errors)
    mo = out["method_options"] if isinstance(out["method_options"], dict) else {}
    if _typed(mo.get("chunk_size"), int) and not (1 <= mo["chunk_size"] <= 1000):
        errors.append((p("method_options.chunk_size"), "must be from 1 to 1000"))
    if mo.get("output_format") not in (None, "first_line", "json"):
        errors.append((p("method_options.output_format"), "must be first_line or json"))
    if out["method"] == "escalation":
        experts = mo.get("experts")
        if not isinstance(experts, list) or not experts or not all(isinstance(e, str) for e in experts):
            errors.append((p("method_options.experts"), "escalation needs a list of expert judge names "
                                                         "(the last one finalises when there are two or more)"))
    if _typed(mo.get("tuple_size"), int) and mo["tuple_size"] < 2:
        errors.append((p("method_options.tuple_size"), "must be at least 2"))
    if "steps" in mo and mo["steps"] not in STEP_MODES:
        errors.append((p("method_options.steps"), f"must be one of {', '.join(STEP_MODES)}"))
    if "router" in mo and mo["router"] not in ROUTERS:
        errors.append((p("method_options.router"), f"must be one of {', '.join(ROUTERS)}"))
    _check_ensemble(out["method"], mo, p, errors)
    _check_budget(out, mo, p, errors)
    if not isinstance(out["structured_output"], bool):
        errors.append((p("structured_output"), "must be true or false"))
    elif out["structured_output"] and out["method"] == "geval":
        errors.append((p("structured_output"), "G-Eval reads one score token, not a JSON answer; "
                                               "set structured_output: false"))
    if not errors and out["backend"] == "openai":
        errors += check_judge(out, p)  # what the provider would refuse, found now rather than by failing calls
    if errors:
        raise JudgeConfigError(errors)
    return {k: out[k] for k in FIELDS}


def _provider(data: dict[str, Any], out: dict[str, Any], p: Any, errors: list[tuple[str, str]]) -> None:
    """`provider` alone reaches a hosted model (backend openai, its endpoint and key variable by
    default); a file without one keeps `backend: openai` as the generic OpenAI-compatible provider."""
    given = data.get("provider")
    if given is None or given == "":
        out["provider"] = GENERIC if out.get("backend") == "openai" else ""
        return
    if not isinstance(given, str) or canonical(given) not in PROVIDERS:
        errors.append((p("provider"), f"must be one of {', '.join(PROVIDERS)}"))
        return
    out["provider"] = canonical(given)
    if "backend" not in data:
        out["backend"] = "openai"
    elif out.get("backend") != "openai":
        errors.append((p("provider"), "a provider is reached over HTTP; backend: transformers takes no provider"))
        return
    profile = get_provider(out["provider"])
    if not out.get("endpoint") and profile.default_endpoint:
        out["endpoint"] = profile.default_endpoint
    if not out.get("api_key_env") and profile.default_key_env:
        out["api_key_env"] = profile.default_key_env


def _check_credentials(opts: dict[str, Any], p: Any, errors: list[tuple[str, str]]) -> None:
    """Credentials only by reference: a literal one would be stored, snapshotted into every run and
    copied wherever the judge goes; a variable's NAME is safe to store and show."""
    headers = opts.get("headers") if isinstance(opts.get("headers"), dict) else {}
    for name, value in headers.items():
        if not isinstance(value, str):
            errors.append((p(f"backend_options.headers.{name}"), "must be text"))
        elif is_secret_header(str(name)):
            errors.append((p(f"backend_options.headers.{name}"),
                           f"a literal value is refused for this header (it may carry a credential); put the value "
                           f"in an environment variable and set backend_options.headers_env: {{{name}: VARIABLE_NAME}}"
                           f" (public headers allowed literally: {', '.join(sorted(PUBLIC_HEADERS))})"))
    refs = opts.get("headers_env") if isinstance(opts.get("headers_env"), dict) else {}
    for name, env in refs.items():
        if not isinstance(env, str) or not ENV_RE.match(env):
            errors.append((p(f"backend_options.headers_env.{name}"),
                           "must be an environment variable NAME such as JUDGE_GATEWAY_KEY"))
        elif problem := key_variable_problem(env):
            errors.append((p(f"backend_options.headers_env.{name}"), problem))
    body = opts.get("extra_body") if isinstance(opts.get("extra_body"), dict) else {}
    for name in body:
        if is_secret_name(str(name)):
            errors.append((p(f"backend_options.extra_body.{name}"), "looks like a credential; send it as a header "
                                                                     "held by reference (backend_options.headers_env)"))


def _endpoint_problems(url: str) -> list[str]:
    """A literal credential in the URL is refused (by reference only, as headers); the address must be one
    a judge may reach (judges.egress). Whatever the URL still holds is masked when shown (judges.masking)."""
    problems = []
    try:
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return ["not a valid URL"]
    if "@" in parts.netloc:
        problems.append("user info (user:password@) is refused in the URL: send the credential as a header held "
                        "by reference (backend_options.headers_env)")
    if secret := [k for k, _ in query if is_secret_name(k) or k.lower() in URL_SECRET_PARAMS]:
        problems.append(f"query parameter(s) {', '.join(secret)} look like credentials: send them as a header held "
                        f"by reference (backend_options.headers_env)")
    if problem := endpoint_problem(url):
        problems.append(problem)
    return problems


def _check_ensemble(method: str, mo: dict[str, Any], p: Any, errors: list[tuple[str, str]]) -> None:
    """`ensemble: weighted` with `members` (the voting judges' names) and `weights` (a number per
    member, or "gold": each member's accuracy in its own latest run on the study). The judge
    that carries these options coordinates the vote; its own model does not vote."""
    keys = {"ensemble", "members", "weights"} & set(mo)
    if not keys:
        return
    if method not in ENSEMBLE_METHODS:
        errors.append((p("method_options.ensemble"), f"only {', '.join(ENSEMBLE_METHODS)} judges vote in an ensemble"))
        return
    if mo.get("ensemble") not in ENSEMBLES:
        errors.append((p("method_options.ensemble"), f"must be one of {', '.join(ENSEMBLES)} (with members)"))
    members = mo.get("members")
    if not isinstance(members, list) or not members or not all(isinstance(m, str) and m for m in members):
        errors.append((p("method_options.members"), "a weighted ensemble needs a list of the other judges' names"))
        return
    w = mo.get("weights")
    if w is None or w == "gold":
        return
    if (not isinstance(w, list) or len(w) != len(members)
            or not all(_typed(x, float) and x >= 0 for x in w) or not any(x > 0 for x in w)):
        errors.append((p("method_options.weights"), f'must be "gold" or {len(members)} numbers >= 0 '
                                                    "(one per member, in order), not all 0"))


def _check_budget(out: dict[str, Any], mo: dict[str, Any], p: Any, errors: list[tuple[str, str]]) -> None:
    if _typed(mo.get("max_cost_usd"), float) and mo["max_cost_usd"] <= 0:
        errors.append((p("method_options.max_cost_usd"), "must be a positive amount of USD (leave it out for no cap)"))
    for key in ("rpm", "tpm"):
        if _typed(mo.get(key), int) and mo[key] < 1:
            errors.append((p(f"method_options.{key}"), "must be at least 1 (leave it out for no limit)"))
    if _typed(mo.get("batch_discount"), float) and not (0 < mo["batch_discount"] <= 1):
        errors.append((p("method_options.batch_discount"), "must be in (0, 1]: the batch price as a share of the "
                                                           "normal one (0.5 for OpenAI and Anthropic)"))
    if "batch_api" in mo and mo["batch_api"] not in BATCH_APIS:
        errors.append((p("method_options.batch_api"), f"must be one of {', '.join(BATCH_APIS)}"))
    if mo.get("batch"):
        if out.get("backend") != "openai":
            errors.append((p("method_options.batch"), "batch APIs are for hosted providers (backend: openai); "
                                                      "a local transformers model batches by itself"))
        api = mo.get("batch_api") or ("anthropic" if out.get("provider") == "anthropic" else "openai")
        if (api == "anthropic") != (out.get("provider") == "anthropic") or \
                out.get("provider") not in ("openai", "anthropic", GENERIC):
            errors.append((p("method_options.batch"), f"{api}'s batch API takes {api}'s requests: "
                                                      f"use provider: {'anthropic' if api == 'anthropic' else 'openai'}"
                                                      f" (or {GENERIC} for an OpenAI-style server), and leave "
                                                      f"batch_api out"))
        if out.get("method") == "escalation" or mo.get("ensemble"):
            errors.append((p("method_options.batch"), "escalation and ensembles call several judges; "
                                                      "run their members as batch judges instead"))


def parse_judges_text(text: str, *, filename: str = "") -> list[dict[str, Any]]:
    """Validated judges from YAML or JSON text (JSON is YAML)."""
    try:
        data = yaml_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else filename or "file"
        raise JudgeConfigError([(where, f"not valid YAML: {getattr(exc, 'problem', exc)}")]) from exc
    if isinstance(data, dict) and "judges" in data:
        entries = data["judges"]
        if not isinstance(entries, list) or not entries:
            raise JudgeConfigError([("judges", "must be a non-empty list")])
        prefixes = [f"judges[{i}]" for i in range(len(entries))]
    else:
        entries, prefixes = [data], [""]
    out, errors = [], []
    for entry, prefix in zip(entries, prefixes):
        try:
            out.append(validate_judge(entry, prefix))
        except JudgeConfigError as exc:
            errors += exc.errors
    names = [j["name"] for j in out]
    errors += [("judges", f"name {n!r} appears twice") for n in sorted({n for n in names if names.count(n) > 1})]
    if errors:
        raise JudgeConfigError(errors)
    return out


def chunk_size(config: dict[str, Any], default: int = 16) -> int:
    return int((config.get("method_options") or {}).get("chunk_size") or default)
