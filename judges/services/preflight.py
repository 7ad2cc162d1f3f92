"""Before a worker asks a judge anything: can it reach the endpoint, with the key it will use?

Each worker process checks, before a chunk of a run sends its first call, every HTTP judge the
run reaches (escalation's experts and an ensemble's members too): the variables that hold the key
and the judge's secret headers are set in *this* worker's environment (a key exported in another
terminal never reaches the workers `make run` started), and one cheap call, the provider's list
of models, answers with that key. A definite no (a variable unset, the key refused) fails the
run at once with the reason, instead of a run of error rows. An endpoint that cannot be reached may
be a server still starting: the chunk asks nothing and is retried by its task, and the run fails
with the reason only when the task's last attempt still cannot reach it. A provider that is busy
(429, 5xx) or has no models route (404) passes: the calls themselves retry, or speak.

A pass is remembered per process for PASS_TTL_S for that endpoint, key and headers, so a run of
many chunks costs one call per worker process; a chunk whose calls failed on retryable errors forgets it
(forget_passes), so its next attempt checks again.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from judges.masking import mask_url
from judges.providers import get_provider, settings_from_judge
from judges.providers.base import error_message

PASS_TTL_S = 300.0
TIMEOUT_S = 10.0
REFUSED = {401, 403}

_passed: dict[str, float] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Problem:
    why: str
    transient: bool = False  # the endpoint could not be reached: try again later


def run_judges(config: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The judge and every judge it asks: ensemble members, escalation experts."""
    yield config
    yield from config.get("members") or []
    yield from (config.get("stages") or [])[1:]


def preflight_problem(config: Mapping[str, Any]) -> Problem | None:
    """Why this worker cannot ask the judges of `config` (a run's snapshot); None when it can."""
    for judge in run_judges(config):
        if judge.get("backend") != "openai":
            continue  # a local model: nothing to reach
        problem = judge_problem(judge)
        if problem:
            return problem
    return None


def judge_problem(judge: Mapping[str, Any]) -> Problem | None:
    settings = settings_from_judge(judge)
    provider = get_provider(settings.provider)
    worker = socket.gethostname()
    names = [settings.api_key_env, *settings.headers_env.values()]
    unset = [n for n in dict.fromkeys(names) if n and not os.environ.get(n)]
    if unset:
        verb = "is" if len(unset) == 1 else "are"
        return Problem(f"{', '.join(unset)} {verb} not set on the workers (worker {worker}, judge "
                       f"{judge.get('name')}); set it where the workers start (export it in the shell that starts "
                       f"them, e.g. before `make run`, or in their environment file), restart them and resume the run")
    url, headers, seen = _endpoint(judge)
    with _lock:
        if _passed.get(seen, 0.0) > time.monotonic():
            return None
    problem = _ask(url, headers, settings.api_key_env, provider.title, worker, str(judge.get("name")))
    if problem is None:
        with _lock:
            _passed[seen] = time.monotonic() + PASS_TTL_S
    return problem


def _endpoint(judge: Mapping[str, Any]) -> tuple[str, dict[str, str], str]:
    """The judge's models URL and headers, and the key its pass is remembered by."""
    settings = settings_from_judge(judge)
    provider = get_provider(settings.provider)
    key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
    headers = provider.headers(settings, key)
    url = provider.models_url(settings)
    return url, headers, hashlib.sha256(json.dumps([url, sorted(headers.items())]).encode()).hexdigest()


def forget_passes(config: Mapping[str, Any]) -> None:
    """Forget the remembered passes of the judges of `config`: a chunk whose calls failed on retryable errors
    (the server gone since it passed, or overloaded) has its next attempt check the endpoint again, so a server
    that went away fails the run with the reason rather than its last attempt storing a row of errors."""
    with _lock:
        for judge in run_judges(config):
            if judge.get("backend") == "openai":
                _passed.pop(_endpoint(judge)[2], None)


def _ask(url: str, headers: dict[str, str], key_env: str | None, title: str, worker: str,
         name: str) -> Problem | None:
    import httpx

    from judges.backends.tls import tls_context

    shown = mask_url(url)
    try:
        resp = httpx.get(url, headers=headers, timeout=TIMEOUT_S, verify=tls_context())
    except httpx.TransportError as exc:
        return Problem(f"worker {worker} cannot reach judge {name}'s endpoint ({shown}): {type(exc).__name__}: "
                       f"{exc}; is the server up, and reachable from where the workers run?", transient=True)
    if resp.status_code in REFUSED:
        why = error_message(resp.text[:2000]) or resp.reason_phrase
        key = f"the key in {key_env}" if key_env else "no key (the judge names no api_key_env)"
        who = title or "the server"
        return Problem(f"{who[:1].upper()}{who[1:]} at {shown} refused {key} ({resp.status_code}: {why}) for judge "
                       f"{name}; set a valid key where the workers start (worker {worker}) and resume the run")
    return None


def forget() -> None:
    """Forget every pass (tests; a key changed under a running worker)."""
    with _lock:
        _passed.clear()
