"""One masking rule for a judge's secrets, used wherever a judge's settings leave the worker:
the API (configurations and runs' snapshots), pages, run files, the Django admin, the
`judge_request` command and stored error messages. Pure (no Django).

Keys are held by reference (`api_key_env`, `backend_options.headers_env`), so a stored judge
normally holds no secret at all. What is masked anyway, for judges stored before literal
credential headers were refused and for a value a provider echoes back:

- every header except a short list of known-public ones (deny by default: a custom
  `X-Whatever-Auth` is masked without anyone listing it);
- a value under a credential-like name (`api_key`, `token`, `password`, ...) anywhere in
  `backend_options` (e.g. inside `extra_body`), and in an endpoint's query string;
- the password in an endpoint's `user:password@`.

A masked value keeps its scheme and at most 3 characters (`Bearer sk-...`), enough to tell
keys apart, never enough to use one.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

PUBLIC_HEADERS = frozenset({"content-type", "accept", "accept-encoding", "user-agent", "anthropic-version",
                            "anthropic-beta", "openai-organization", "openai-project", "openai-beta",
                            "http-referer", "referer", "x-title"})
SECRET_WORDS = frozenset({"authorization", "auth", "apikey", "token", "secret", "password", "passwd", "cookie",
                          "credential", "credentials", "signature", "bearer", "key"})
MASK = "..."


def is_secret_header(name: str) -> bool:
    return name.strip().lower() not in PUBLIC_HEADERS


def is_secret_name(name: str) -> bool:
    """A credential-like setting name. `*_env` names a variable (a reference, not a secret) and a
    bare `key` is a criterion key (method_options.key); `api_key`, `x-api-key`, `access_token` are secret."""
    parts = [p for p in re.split(r"[^a-z0-9]+", name.lower()) if p]
    if not parts or parts[-1] == "env" or parts == ["key"]:
        return False
    return any(p in SECRET_WORDS for p in parts)


def mask_value(value: Any) -> str:
    """`Bearer sk-abc123...xyz` -> `Bearer sk-...`; a `$NAME` placeholder (an unset variable) is kept."""
    text = str(value)
    scheme, _, token = text.rpartition(" ")
    if token.startswith("$"):
        return text
    shown = token[:3] + MASK if len(token) > 8 else MASK
    return f"{scheme} {shown}".strip()


def mask_headers(headers: Mapping[str, Any]) -> dict[str, Any]:
    return {k: mask_value(v) if is_secret_header(k) else v for k, v in headers.items()}


def mask_url(url: str) -> str:
    """An endpoint with its password and credential-like query values masked."""
    if not isinstance(url, str) or ("@" not in url and "?" not in url):
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{host}" if ":" in userinfo else f"{MASK}@{host}"
    query = urlencode([(k, MASK if (is_secret_name(k) or k.lower() == "key") else v)
                       for k, v in parse_qsl(parts.query, keep_blank_values=True)], safe=".")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _mask_names(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: (v if str(k).endswith("_env")  # names of variables (headers_env), not their values
                    else mask_value(v) if isinstance(v, (str, int)) and not isinstance(v, bool)
                    and is_secret_name(str(k)) else _mask_names(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_names(v) for v in value]
    return value


def mask_backend_options(options: Any) -> Any:
    if not isinstance(options, Mapping):
        return options
    out = _mask_names({k: v for k, v in options.items() if k != "headers"})
    if isinstance(options.get("headers"), Mapping):
        out["headers"] = mask_headers(options["headers"])
    return out


def mask_judge(config: Any) -> Any:
    """A judge's settings (a configuration, a run's snapshot, a jury's members or a chain's stages)
    as they may be shown: a new dict, the stored one untouched."""
    if isinstance(config, list):
        return [mask_judge(c) for c in config]
    if not isinstance(config, Mapping):
        return config
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key == "backend_options":
            out[key] = mask_backend_options(value)
        elif key == "endpoint":
            out[key] = mask_url(value)
        elif key == "api_key":  # refused on load; masked should an old row hold one
            out[key] = mask_value(value)
        elif isinstance(value, (Mapping, list)):
            out[key] = mask_judge(value)
        else:
            out[key] = value
    return out


def secret_values(config: Any, environ: Mapping[str, str] | None = None) -> set[str]:
    """The literal secrets a judge's settings hold or name (header values, credential-like values,
    and the values of the variables it names), to scrub from text such as an error message."""
    found: set[str] = set()

    def walk(value: Any, name: str = "") -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                if k == "headers" and isinstance(v, Mapping):
                    found.update(str(x) for h, x in v.items() if is_secret_header(str(h)))
                elif str(k).endswith("_env") and environ is not None:
                    names = v.values() if isinstance(v, Mapping) else [v]
                    found.update(environ.get(n, "") for n in names if isinstance(n, str))
                else:
                    walk(v, str(k))
        elif isinstance(value, list):
            for v in value:
                walk(v, name)
        elif isinstance(value, str) and is_secret_name(name):
            found.add(value)

    walk(config)
    tokens = {t for v in found for t in (v, v.rpartition(" ")[2])}
    return {t for t in tokens if len(t) >= 6}


def scrub_text(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each secret masked (longest first, so a key inside a header
    value is not half-replaced)."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret and secret in text:
            text = text.replace(secret, mask_value(secret))
    return text
