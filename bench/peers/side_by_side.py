"""Concord, Potato and Label Studio in one run, level by level: the same items, the same raters with no
think time, one system after the other on the same machine, and the ratio of Concord's rated items per
second to the best peer's at each level.

    .venv/bin/python -m bench.peers.side_by_side [--levels 10 50 100] [--seconds 40] [--items 4000]

Concord is served as the saturation bench serves it (gunicorn, bench.loadclient.GUNICORN_ARGS: 4 workers
× 4 threads, a fresh database per level), one request per rated item as its browser workspace sends it
(`submit?next=1`); each peer as its own driver serves and drives it (bench/peers/potato.py,
label_studio.py: three and two requests per item, as their pages send them). All three are driven in
their measured phase by the same client, bench.leanhttp (`--client httpx` for httpx, as the runs of
2026-11-29 and before were): the load generator runs on the machine's cores, and httpx's CPU an item cut the fastest
system's rate most. Every system's stored answers are audited afterwards. Writes
bench/results/peers_side_by_side.json.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import secrets
import sys
import time
from pathlib import Path

from bench.peers import PeerUnavailable

RESULTS = Path(__file__).resolve().parent.parent / "results"
PEERS = ("potato", "label_studio")
RATERS_PER_ITEM = 3


def concord(items: int, seconds: float, raters: int, lean: bool = True) -> dict:
    """Concord under the peers' load, in the shape of a peer driver's result."""
    from bench.bench_annotator_loop import SERVER_APP_NAME, Phase, _measured_phase
    from bench.dbtools import bench_database
    from bench.loadclient import audit, free_port, setup_study, start_server, stop_server, warm_up

    phase = Phase(f"{raters} raters", seconds, None, one_trip=True, lean_client=lean)
    with bench_database(f"side{raters}") as db_name:
        secret_key = secrets.token_urlsafe(40)
        slug, sessions = setup_study(items, secret_key, raters=raters, raters_per_item=RATERS_PER_ITEM,
                                     user_prefix=f"side-{raters}")
        port = free_port()
        server = start_server(port, secret_key, db_name=db_name, extra_env={"PGAPPNAME": SERVER_APP_NAME})
        try:
            asyncio.run(warm_up(f"http://127.0.0.1:{port}", slug, sessions[0]))
            _measured_phase(f"http://127.0.0.1:{port}", slug, sessions, phase, server)
        finally:
            stop_server(server)
        checked = audit(slug, phase.acknowledged)
    rated, window = len(phase.acknowledged), phase.ended - phase.started
    return {"name": "concord", "client": "bench.leanhttp" if lean else "httpx", "items": items, "raters": raters,
            "seconds": seconds,
            "rated_items_per_s": rated / window, "cpu_ms_per_item": 1000 * phase.server_cpu_s / max(rated, 1),
            "db_cpu_ms_per_item": (1000 * phase.db_cpu_s / max(rated, 1)) if phase.db_cpu_s is not None else None,
            "lost": checked["lost_or_incomplete"], "duplicated": checked["duplicate_ratings"],
            "over_assigned": checked["over_assigned_items"], "failed_requests": len(phase.errors),
            "window_s": round(window, 2), "rated_items": rated, "audit": checked,
            "load_generator_cpu_ms_per_item": 1000 * phase.client_cpu_s / max(rated, 1)}


def ratios(level_results: dict[str, dict]) -> dict:
    """Concord's rated items/s over the best peer's that ran, and which peer that was."""
    peers = {name: r["rated_items_per_s"] for name, r in level_results.items() if name != "concord" and r}
    if not peers or "concord" not in level_results:
        return {"best_peer": None, "ratio": None}
    best = max(peers, key=peers.get)
    return {"best_peer": best, "ratio": level_results["concord"]["rated_items_per_s"] / peers[best]}


def main(argv: list[str]) -> int:
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from bench.__main__ import machine
    from bench.machine_speed import probe_ms

    parser = argparse.ArgumentParser(prog="python -m bench.peers.side_by_side")
    parser.add_argument("--levels", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--client", choices=("lean", "httpx"), default="lean",
                        help="the raters' client in the measured phase, the same for every system")
    args = parser.parse_args(argv)
    probe = probe_ms()
    levels = []
    lean = args.client == "lean"
    for raters in args.levels:
        results: dict[str, dict | None] = {"concord": concord(args.items, args.seconds, raters, lean)}
        for peer in PEERS:
            try:
                results[peer] = importlib.import_module(f"bench.peers.{peer}").run(args.items, args.seconds, raters,
                                                                                    lean)
            except PeerUnavailable as exc:
                print(f"{peer} unavailable: {exc}", file=sys.stderr)
                results[peer] = None
        levels.append({"raters": raters, "results": results, **ratios(results)})
        print(_line(levels[-1]), flush=True)
    out = {"name": "peers_side_by_side", "levels": levels, "seconds": args.seconds, "items": args.items,
           "client": "bench.leanhttp" if lean else "httpx",
           "machine": machine(probe), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "peers_side_by_side.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


def _line(level: dict) -> str:
    cells = [f"{name} {r['rated_items_per_s']:.1f}/s ({r['cpu_ms_per_item']:.1f} ms, lost {r['lost']}, "
             f"dup {r['duplicated']})" for name, r in level["results"].items() if r]
    ratio = f"{level['ratio']:.1f}x {level['best_peer']}" if level["ratio"] else "no peer ran"
    return f"{level['raters']:>4} raters: " + "; ".join(cells) + f" -> {ratio}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
