"""Peer platforms under the same load as Concord's annotator loop: the parts every peer driver shares.

Each peer (bench/peers/<name>.py) is installed into a virtualenv of its own under .peers/<name>/venv,
so its dependencies never meet Concord's; it exposes run(items, seconds, raters, lean=True) -> dict, which
`python -m bench.peers <name>` prints and writes to bench/results/peer_<name>.json. Here: that
virtualenv, the server's process group and its CPU time, the raters' shared tally and their measured
client.

Raters sign up and warm up with httpx (forms, redirects); the measured phase sends its requests through
bench.leanhttp unless lean=False, as Concord's raters do, so that the load generator, which runs on
the same cores, takes as little of them from the system measured as it can.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import venv
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent.parent
PEERS_DIR = ROOT / ".peers"


class PeerUnavailable(Exception):
    """The peer cannot be installed or started here; the message is the one-line reason."""


def peer_python(name: str, requirements: list[str]) -> Path:
    """The python of .peers/<name>/venv with `requirements` (pinned) installed; created on first use.
    pip leaves pinned requirements that are already satisfied alone, so a rerun needs no network."""
    env_dir = PEERS_DIR / name / "venv"
    python = env_dir / "bin" / "python"
    if not python.exists():
        try:
            venv.EnvBuilder(with_pip=True).create(env_dir)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise PeerUnavailable(f"could not create the virtualenv {env_dir}: {exc}") from exc
    result = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
                            capture_output=True, text=True)
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
        reason = errors[-1] if errors else (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise PeerUnavailable(f"pip could not install {' '.join(requirements)} (no network?): {reason}")
    return python


def installed_version(python: Path, distribution: str) -> str:
    return subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({distribution!r}))"],
                          capture_output=True, text=True, check=True).stdout.strip()


def start_process(cmd: list[str], *, cwd: Path, env: dict[str, str], log_path: Path, ready_url: str,
                  timeout_s: float = 180) -> subprocess.Popen:
    """`cmd` in its own process group, output to `log_path`; returns once `ready_url` answers 200."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise PeerUnavailable(f"the server exited at start: {log_tail(log_path, 400)!r}")
        try:
            if httpx.get(ready_url, timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    stop_process(proc)
    raise PeerUnavailable(f"the server did not answer {ready_url} within {timeout_s:.0f} s: {log_tail(log_path, 400)!r}")


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def log_tail(path: Path, chars: int = 2000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def process_tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by a process and its live descendants."""
    import psutil

    total = 0.0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


@dataclass
class RaterTally:
    """What the raters of one run saw (one event loop: no locks needed)."""

    acknowledged: dict[tuple[str, str], object] = field(default_factory=dict)  # (rater, item) -> answers sent
    failed: Counter = field(default_factory=Counter)  # "<request>: <reason>" -> count
    requests: int = 0
    done_raters: int = 0

    def failed_requests(self) -> int:
        return sum(self.failed.values())


async def send(tally: RaterTally, kind: str, request, ok_status: tuple[int, ...]) -> httpx.Response | None:
    """The answer to `request`, or None (counted as failed) on a transport error or another status."""
    tally.requests += 1
    try:
        resp = await request
    except httpx.HTTPError as exc:
        tally.failed[f"{kind}: {type(exc).__name__}"] += 1
        return None
    if resp.status_code not in ok_status:
        tally.failed[f"{kind}: HTTP {resp.status_code}"] += 1
        return None
    return resp


def measured_client(client: httpx.AsyncClient, *, lean: bool, headers: tuple[str, ...] = (), timeout: float):
    """The client a signed-in rater's measured phase uses, to enter: `client` itself (already open), or with
    `lean` a bench.leanhttp client with its cookies and the driver's own `headers` (names in client.headers),
    keeping cookies as the server sets them."""
    if not lean:
        return contextlib.nullcontext(client)
    from bench.leanhttp import LeanClient

    return LeanClient(str(client.base_url).rstrip("/"), cookies={c.name: c.value for c in client.cookies.jar},
                      headers={"Accept": "*/*", **{name: client.headers[name] for name in headers}}, timeout=timeout)


def print_result(result: dict) -> None:
    rows = [("version", result["version"]), ("items / raters", f"{result['items']:,} / {result['raters']}"),
            ("rated items/s", f"{result['rated_items_per_s']:.1f}"),
            ("server CPU per rated item", f"{result['cpu_ms_per_item']:.1f} ms"),
            ("lost", result["lost"]), ("duplicated", result["duplicated"]),
            ("over-assigned items", result["over_assigned"]), ("failed requests", result["failed_requests"])]
    width = max(len(label) for label, _ in rows)
    print(f"\n{result['name']} ({result['seconds']} s at saturation, no think time)", file=sys.stdout)
    for label, value in rows:
        print(f"  {label.ljust(width)}  {value}")
