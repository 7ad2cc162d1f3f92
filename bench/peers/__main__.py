"""`python -m bench.peers <peer>`: a peer annotation platform under Concord's annotator-loop load.

Installs the peer (pinned) into .peers/<peer>/venv, serves it on loopback, runs --raters raters with no
think time for --seconds, audits its stored annotations, prints a table and writes
bench/results/peer_<peer>.json. Exits 2 with a one-line reason when the peer cannot be installed or started.

    .venv/bin/python -m bench.peers potato --items 4000 --seconds 60 --raters 100
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

from bench.peers import PeerUnavailable, print_result

PEERS = ("potato", "label_studio")
RESULTS = Path(__file__).resolve().parent.parent / "results"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers")
    parser.add_argument("peer", choices=PEERS)
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window, after a short warm-up")
    parser.add_argument("--raters", type=int, default=100)
    args = parser.parse_args(argv)
    try:
        result = importlib.import_module(f"bench.peers.{args.peer}").run(args.items, args.seconds, args.raters)
    except PeerUnavailable as exc:
        print(f"{args.peer} unavailable: {exc}", file=sys.stderr)
        return 2
    result["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"peer_{args.peer}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print_result(result)
    print(f"\nwrote {path.relative_to(RESULTS.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
