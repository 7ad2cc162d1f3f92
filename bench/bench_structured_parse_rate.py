"""Parse rate with and without structured output, on llama.cpp's own server (judges/llamacpp.py).

Each preset's schema-capable methods judge its demo items twice through the same adapter a
worker uses (judges.services.engine.judge_items): once in the seed's own output format, once with
the JSON schema built from the rubric sent as the server expects. The model is a tiny random
Llama, so without a schema almost nothing parses; with one, the server's grammar holds every
answer to the schema. Parse rate = slots whose answers were read / slots (a pair whose two orders
disagree was read: "inconsistent" is the method's verdict on the judge, not a parse failure).
ranking and best_worst schemas cannot say "each shown number once" or "best differs from worst"
(no grammar of JSON Schema can), so their rate under a schema is measured, not promised. `python -m bench structured_parse_rate`.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from annotation.simulation.items import items_for
from judges.config import validate_judge
from judges.llamacpp import MODEL_NAME, running_llamacpp_server, server_version
from judges.services.engine import item_slots, judge_items, output_criteria

REPO = Path(__file__).resolve().parent.parent
# (preset, method, method options): the methods that can send a schema.
CASES = [
    ("feedback-000", "all_in_one", {}), ("feedback-000", "per_criterion", {}),
    ("rrgen-001", "all_in_one", {}), ("rrgen-001", "per_criterion", {}),
    ("codegen-002", "all_in_one", {}), ("codegen-002", "per_criterion", {}),
    ("fulltext-004", "per_criterion", {}), ("fulltext-004", "all_in_one", {}),
    ("aqua-003", "label", {}), ("aqua-003", "legacy", {}),
    ("compare-pairwise", "pairwise", {"key": "preference"}),
    ("compare-ranking", "ranking", {}), ("compare-ranking", "best_worst", {}),
]
UNPROMISED = ("ranking", "best_worst")  # their schemas cannot demand distinct numbers (see above)
MAX_TOKENS = 256  # room for a whole schema-shaped answer; the random model stops where the grammar ends


def rubric_of(preset: str) -> dict:
    import yaml

    return yaml.safe_load((REPO / "rubrics" / "presets" / f"{preset}.yaml").read_text())


def items_of(preset: str, n: int) -> list[dict]:
    if preset.startswith("compare-"):
        return items_for(preset, n, seed=3)
    lines = (REPO / "annotation" / "demo" / f"{preset}.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines[:n]]


def judge_config(url: str, method: str, options: dict, structured: bool) -> dict[str, Any]:
    return validate_judge({
        "name": f"bench-{method}", "provider": "llamacpp", "model": MODEL_NAME, "endpoint": url, "method": method,
        "structured_output": structured, "sampling": {"temperature": 0, "max_tokens": MAX_TOKENS},
        "concurrency": 2, "backend_options": {"timeout_s": 300},
        "method_options": {"use_cache": False, **options},
    })


def pending_slots(config: dict, rubric: dict, items: list[dict]) -> dict:
    pending: dict = {}
    crits = output_criteria(config, rubric)
    for it in items:
        n = len(it["outputs"])
        if crits:
            pending.update({(str(it["id"]), i): crits for i in range(n)})
        if slots := item_slots(config, n, rubric, item_key=str(it["id"])):
            pending[(str(it["id"]), None)] = slots
    return pending


def read(judged: Any) -> bool:
    """The slot's answers were read: scored, or (pairwise, ranking with swap) read in both orders but
    disagreeing with the swap, which is the method's verdict on the judge, not a parse failure."""
    return judged.status == "scored" or judged.detail.get("method_status") == "inconsistent"


def parse_rate(url: str, preset: str, method: str, options: dict, structured: bool, n_items: int) -> dict:
    rubric, items = rubric_of(preset), items_of(preset, n_items)
    config = judge_config(url, method, options, structured)
    started = time.perf_counter()
    judged = asyncio.run(judge_items(config, rubric, items, pending_slots(config, rubric, items)))
    scored = sum(1 for j in judged if read(j))
    reasons: dict[str, int] = {}
    for j in judged:
        if not read(j):
            why = str(j.detail.get("parse") or j.detail.get("method_status") or j.status)[:60]
            reasons[why] = reasons.get(why, 0) + 1
    return {"preset": preset, "method": method, "structured": structured, "slots": len(judged),
            "scored": scored, "rate": scored / len(judged) if judged else 0.0,
            "seconds": round(time.perf_counter() - started, 1), "unparsed_reasons": reasons}


def run(full: bool = False) -> dict:
    n_items = 4 if full else 2
    rows, cases = [], []
    with running_llamacpp_server() as server:
        for preset, method, options in CASES:
            for structured in (False, True):
                case = parse_rate(server.base_url, preset, method, options, structured, n_items)
                promised = structured and method not in UNPROMISED
                cases.append(case)
                rows.append({"metric": f"{preset} {method} {'schema' if structured else 'seed format'} parse rate",
                             "value": case["rate"], "unit": f"of {case['slots']} slots",
                             "target": "= 1.0" if promised else None,
                             "ok": case["rate"] == 1.0 if promised else None})
    return {"name": "structured_parse_rate", "rows": rows, "cases": cases,
            "server": f"llama-cpp-python {server_version()} (llama_cpp.server)", "model": MODEL_NAME,
            "config": {"n_items": n_items, "max_tokens": MAX_TOKENS, "temperature": 0}}


if __name__ == "__main__":
    print(json.dumps(run(full="--full" in sys.argv), indent=2))
