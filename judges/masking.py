"""One masking rule for a judge's settings, used wherever they leave the worker: the API
(configurations and runs' snapshots), pages, run files, the Django admin, the `judge_request`
command and stored error messages. Pure (no Django).

By allow-list: a value is shown as stored only where the schema below marks its field public
(the model, the method, sampling, timeouts, ...). Everything else is masked whatever its name or
case: the values of headers other than a few known-public ones, of `extra_body` fields other than
a few sampling knobs, of an endpoint's query (but `api-version`) and its user info, and any field
the schema does not know (`accessToken`, `clientSecret`, `sig=` are masked because nobody listed
them, not because their names look secret).

Keys are held by reference (`api_key_env`, `backend_options.headers_env`), so a stored judge
normally holds no secret at all; the mask is for judges stored before literal credentials were
refused and for a value a provider echoes back.

A masked value keeps its scheme and at most 3 characters (`Bearer sk-...`), enough to tell
keys apart, never enough to use one.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

MASK = "..."

# --- the schema: what is shown as stored ---------------------------------------------------------
# A judge's own fields (judges.config.FIELDS but endpoint and backend_options, shown below) and the
# fields a run's snapshot adds (an ensemble's learnt weights, a jury's members, combine rule, quorum).
PUBLIC_FIELDS = frozenset({
    "name", "description", "provider", "backend", "model", "api_key_env", "method", "mode", "criteria", "sampling",
    "concurrency", "price_in_per_m", "price_out_per_m", "queue", "prompt_overrides", "method_options",
    "structured_output", "ensemble_weights", "combine", "quorum", "inter_judge_alpha", "run", "weight",
    "created_at", "updated_at"})
NESTED_JUDGES = frozenset({"members", "stages"})  # lists of judges inside a snapshot, masked alike
# backend_options shown as stored when their value is a plain number, flag or short word
PUBLIC_BACKEND_OPTIONS = frozenset({
    "timeout_s", "connect_timeout_s", "max_retries", "backoff_base_s", "backoff_max_s", "retry_after_max_s",
    "supports_json_schema", "supports_seed", "reasoning_model", "batch_size", "max_batch_tokens", "dtype", "device",
    "trust_remote_code", "max_input_tokens"})
PUBLIC_HEADERS = frozenset({"content-type", "accept", "accept-encoding", "user-agent", "anthropic-version",
                            "anthropic-beta", "openai-organization", "openai-project", "openai-beta",
                            "http-referer", "referer", "x-title"})
# extra_body fields shown when their value is a number or a flag (sampling knobs of vLLM, TGI, llama.cpp)
PUBLIC_BODY_FIELDS = frozenset({"top_k", "min_p", "typical_p", "repetition_penalty", "presence_penalty",
                                "frequency_penalty", "min_tokens", "n_probs", "best_of", "use_beam_search",
                                "skip_special_tokens", "include_stop_str_in_output", "ignore_eos"})
PUBLIC_QUERY = frozenset({"api-version"})  # Azure's; every other query value is masked

# Names that look like credentials: used to refuse them early with a helpful message (judges.config)
# and to find secrets in the environment for the logs (config.logmask); never to decide what is shown.
SECRET_WORDS = frozenset({"authorization", "auth", "apikey", "token", "secret", "password", "passwd", "cookie",
                          "credential", "credentials", "signature", "sig", "bearer", "key", "session"})
SECRET_PARTS = ("token", "secret", "password", "passwd", "credential", "credentials", "apikey", "signature",
                "cookie")  # a word's ending: accesstoken, clientsecret (max_tokens is no secret)


def is_secret_header(name: str) -> bool:
    return name.strip().lower() not in PUBLIC_HEADERS


def is_secret_name(name: str) -> bool:
    """A credential-like setting name, in any case or style: `api_key`, `x-api-key`, `accessToken`,
    `clientSecret`, `SIG`. `*_env` names a variable (a reference, not a secret) and a bare `key`
    is a criterion key (method_options.key)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)  # camelCase -> camel_case
    parts = [p for p in re.split(r"[^a-z0-9]+", spaced.lower()) if p]
    if not parts or parts[-1] == "env" or parts == ["key"]:
        return False
    return any(p in SECRET_WORDS or p.endswith(SECRET_PARTS) for p in parts)


def mask_value(value: Any) -> str:
    """`Bearer sk-abc123...xyz` -> `Bearer sk-...`; a `$NAME` placeholder (an unset variable) is kept."""
    text = str(value)
    scheme, _, token = text.rpartition(" ")
    if token.startswith("$"):
        return text
    shown = token[:3] + MASK if len(token) > 8 else MASK
    return f"{scheme} {shown}".strip()


def _masked_leaf(value: Any) -> Any:
    return mask_value(value) if isinstance(value, str) else MASK


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= 40)


def mask_headers(headers: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v if not is_secret_header(str(k)) and _plain(v) else _masked_leaf(v) for k, v in headers.items()}


def mask_body_extras(body: Any) -> Any:
    """`extra_body` as shown: every field name, a value only for the public sampling knobs."""
    if not isinstance(body, Mapping):
        return _masked_leaf(body)
    return {k: v if k in PUBLIC_BODY_FIELDS and isinstance(v, (bool, int, float)) else _masked_leaf(v)
            for k, v in body.items()}


def mask_url(url: Any) -> Any:
    """An endpoint with its user info, its query values (but `api-version`) and fragment masked."""
    if not isinstance(url, str):
        return url if url is None else MASK
    if not any(c in url for c in "@?#"):
        return url
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        pairs = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return MASK
    netloc = f"{MASK}@{host}" if "@" in parts.netloc else host
    query = "&".join(f"{quote(k, safe='-_.')}={quote(v, safe='-_.') if k in PUBLIC_QUERY else MASK}"
                     for k, v in pairs)
    if parts.query and not pairs:
        query = MASK
    return urlunsplit((parts.scheme, netloc, parts.path, query, MASK if parts.fragment else ""))


def mask_backend_options(options: Any) -> Any:
    if not isinstance(options, Mapping):
        return options if options is None else MASK
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key == "headers" and isinstance(value, Mapping):
            out[key] = mask_headers(value)
        elif key == "headers_env" and isinstance(value, Mapping):  # header -> the NAME of a variable
            out[key] = {h: v if isinstance(v, str) and len(v) <= 100 else MASK for h, v in value.items()}
        elif key == "extra_body":
            out[key] = mask_body_extras(value)
        elif key in PUBLIC_BACKEND_OPTIONS and _plain(value):
            out[key] = value
        else:
            out[key] = _masked_leaf(value)
    return out


def mask_judge(config: Any) -> Any:
    """A judge's settings (a configuration, a run's snapshot, a jury's members or a chain's stages)
    as they may be shown: a new dict, the stored one untouched."""
    if isinstance(config, list):
        return [mask_judge(c) for c in config]
    if not isinstance(config, Mapping):
        return _masked_leaf(config)
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key in PUBLIC_FIELDS:
            out[key] = value
        elif key == "backend_options":
            out[key] = mask_backend_options(value)
        elif key == "endpoint":
            out[key] = mask_url(value)
        elif key in NESTED_JUDGES and isinstance(value, list):
            out[key] = mask_judge(value)
        else:  # not in the schema (an old row's api_key, a field added later): masked until listed
            out[key] = _masked_leaf(value)
    return out


def _url_secrets(url: Any) -> list[str]:
    if not isinstance(url, str):
        return []
    try:
        parts = urlsplit(url)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return [url]
    userinfo = parts.netloc.rpartition("@")[0]
    return [*userinfo.split(":", 1), *(v for k, v in pairs if k not in PUBLIC_QUERY), parts.fragment]


def secret_values(config: Any, environ: Mapping[str, str] | None = None) -> set[str]:
    """The values a judge's settings hold or name that the mask hides (header values, body extras,
    the endpoint's user info and query, fields the schema does not know, the values of the variables
    it names), to scrub from text such as an error message."""
    found: set[str] = set()

    def leaves(value: Any) -> None:
        if isinstance(value, Mapping):
            for v in value.values():
                leaves(v)
        elif isinstance(value, list):
            for v in value:
                leaves(v)
        elif isinstance(value, (str, int)) and not isinstance(value, bool):
            found.add(str(value))

    def judge(cfg: Any) -> None:
        if isinstance(cfg, list):
            for c in cfg:
                judge(c)
            return
        if not isinstance(cfg, Mapping):
            return
        names = [cfg.get("api_key_env")]
        for key, value in cfg.items():
            if key in PUBLIC_FIELDS:
                continue
            if key == "endpoint":
                found.update(_url_secrets(value))
            elif key in NESTED_JUDGES:
                judge(value)
            elif key == "backend_options" and isinstance(value, Mapping):
                shown = mask_backend_options(value)
                for k, v in value.items():
                    if k == "headers_env" and isinstance(v, Mapping):
                        names += list(v.values())
                    elif k == "headers" and isinstance(v, Mapping):
                        found.update(str(x) for h, x in v.items() if shown[k].get(h) != x)
                    elif shown.get(k) != v:
                        leaves(v)
            else:
                leaves(value)
        if environ is not None:
            found.update(environ.get(n, "") for n in names if isinstance(n, str) and n)

    judge(config)
    tokens = {t for v in found for t in (v, v.rpartition(" ")[2])}
    return {t for t in tokens if len(t) >= 6}


def scrub_text(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each secret masked (longest first, so a key inside a header
    value is not half-replaced)."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret and secret in text:
            text = text.replace(secret, mask_value(secret))
    return text
