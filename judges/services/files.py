"""Per-run files, as seed 003 writes them: report.txt, labeled.csv, errors.txt, correct.txt.

Written under MEDIA_ROOT/judge_runs/<run id>/ when the run ends, and rebuilt from the
database whenever one is asked for and missing (a crash between finishing and writing).
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Count

from annotation.models import Output
from annotation.reports.stats import NUMERIC_KINDS
from annotation.stats.classification import FAILED, gold_eval
from annotation.stats.gold import agrees
from judges.models import JudgeRun, JudgeScore
from judges.prompts.trajectory import TRUNCATION_RULE
from judges.services.gold import gold_value, list_cost, method_title, output_key, seed_table

RUN_FILES = ("report.txt", "labeled.csv", "errors.txt", "correct.txt")
LABELED_COLUMNS = ["id", "item", "output", "system", "criterion", "value", "score", "status", "gold", "correct",
                   "tokens_in", "tokens_out", "cost_usd", "reasoning"]


def run_dir(run: JudgeRun) -> Path:
    return Path(settings.MEDIA_ROOT) / "judge_runs" / str(run.pk)


def _rows(run: JudgeRun) -> list[dict[str, Any]]:
    counts = dict(Output.objects.filter(item__study_id=run.study_id).values("item_id")
                  .annotate(n=Count("id")).values_list("item_id", "n"))
    crits = {c["key"]: c for c in run.study.rubric.get("criteria", [])}
    out = []
    qs = (JudgeScore.objects.filter(run=run).select_related("item", "output")
          .order_by("item_id", "output__position", "criterion"))
    for s in qs.iterator(chunk_size=2000):
        pos = s.output.position if s.output else None
        key = output_key(s.item.external_id, pos, counts.get(s.item_id, 1)) if pos is not None else s.item.external_id
        gold = gold_value(s.item.gold, s.criterion, pos) if s.criterion in crits else None
        pred = s.value if s.status == "scored" else None
        correct = None
        if gold is not None:
            correct = agrees(gold, pred, numeric=crits[s.criterion].get("kind") in NUMERIC_KINDS)
        out.append({"id": key, "item": s.item.external_id, "output": pos if pos is not None else "",
                    "system": s.output.system if s.output else "", "criterion": s.criterion,
                    "value": "" if s.value is None else (s.value if isinstance(s.value, str) else json.dumps(s.value)),
                    "score": "" if s.score is None else s.score, "status": s.status,
                    "gold": "" if gold is None else gold, "correct": "" if correct is None else int(correct),
                    "tokens_in": s.tokens_in, "tokens_out": s.tokens_out, "cost_usd": f"{s.cost_usd:.8f}",
                    "reasoning": s.reasoning, "_raw": s.raw_text, "_detail": s.detail})
    return out


def _labeled_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=LABELED_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _block(r: dict[str, Any]) -> str:
    lines = [f"id: {r['id']}  criterion: {r['criterion']}  status: {r['status']}",
             f"predicted: {r['value'] or '-'}  gold: {r['gold'] if r['gold'] != '' else '-'}"]
    if r["_detail"]:
        lines.append(f"detail: {json.dumps(r['_detail'], ensure_ascii=False, default=str)}")
    lines.append("raw:")
    lines.append(r["_raw"] or "(empty)")
    return "\n".join(lines) + "\n" + "=" * 72 + "\n"


def _report(run: JudgeRun, rows: list[dict[str, Any]]) -> str:
    c = run.config
    dur = (run.finished_at - run.started_at).total_seconds() if run.finished_at and run.started_at else None
    n = len(rows)
    lines = [
        f"Judge run {run.pk}: {c.get('name')} on study {run.study.slug}",
        f"status: {run.status}",
        f"backend: {c.get('backend')}  model: {c.get('model')}  method: {c.get('method')}  mode: {c.get('mode')}",
        f"sampling: {json.dumps(c.get('sampling') or {}, sort_keys=True)}",
        f"criteria: {', '.join(run.criteria) or '(pairs)'}",
        f"slots expected: {run.n_expected}  written: {n}",
        f"scored: {run.n_scored}  unparsed: {run.n_unparsed}  refusal: {run.n_refusal}  error: {run.n_error}  "
        f"truncated: {run.n_truncated}",
        f"tokens in: {run.tokens_in}  out: {run.tokens_out}  cost: ${run.cost_usd:.6f}",
    ]
    if run.n_outputs:
        lines.append(f"cost per 10K outputs: ${run.cost_usd / run.n_outputs * 10_000:.4f}")
    if dur:
        lines.append(f"duration: {dur:.1f} s  throughput: {n / dur:.2f} slots/s")
    if Output.objects.filter(item__study_id=run.study_id, kind="trajectory").exists():
        asked = (c.get("method_options") or {}).get("steps") or "calls"
        lines.append(f"trajectories: per-step criteria asked as {asked} "
                     f"(calls: one call per step; structured: one call per criterion and trajectory)")
        lines.append(f"truncation: {TRUNCATION_RULE}")
    crits = {k["key"]: k for k in run.study.rubric.get("criteria", [])}
    for key in run.criteria:
        crit = crits.get(key) or {}
        graded = [r for r in rows if r["criterion"] == key and r["gold"] != ""]
        if not graded:
            continue
        lines.append("")
        lines.append(f"== gold evaluation of {key} (n={len(graded)}) ==")
        if crit.get("kind") in ("choice", "binary"):
            choices = [str(ch["value"]) for ch in crit.get("choices") or []]
            positive = choices[0] if choices else "TP"
            rep = gold_eval({r["id"]: str(r["gold"]) for r in graded},
                            {r["id"]: str(r["value"]) if r["status"] == "scored" else FAILED for r in graded},
                            positive=positive, labels=choices or None,
                            cost={r["id"]: list_cost(float(r["cost_usd"]), r["_detail"]) for r in graded})
            lines += seed_table(rep, method=method_title(c), n_classes=len(choices))
            lines.append("cached calls count at what they would have cost (the method's price, not this rerun's)")
            lines.append(f"unparsed or failed: {rep['unparsed']}  (counted as wrong, label {FAILED})")
            lines.append("per class: " + "  ".join(
                f"{lab} P={v['precision']:.3f} R={v['recall']:.3f} F1={v['f1']:.3f} n={v['support']}"
                for lab, v in rep["per_class"].items()))
            cm = rep["confusion_matrix"]
            lines.append("confusion (rows gold, columns predicted): " + " ".join(cm["labels"]))
            lines += [f"  {lab:>6} " + " ".join(f"{x:>4}" for x in row) for lab, row in zip(cm["labels"], cm["matrix"])]
        else:
            pairs = [(float(r["score"]), float(r["gold"])) for r in graded if r["score"] != ""]
            if pairs:
                mae = sum(abs(a - b) for a, b in pairs) / len(pairs)
                exact = sum(1 for a, b in pairs if round(a) == round(b)) / len(pairs)
                lines.append(f"scored: {len(pairs)}  MAE: {mae:.3f}  exact: {exact:.3f}")
    return "\n".join(lines) + "\n"


def render_run_files(run: JudgeRun) -> dict[str, str]:
    rows = _rows(run)
    wrong = [r for r in rows if r["status"] != "scored" or r["correct"] == 0]
    right = [r for r in rows if r["correct"] == 1]
    return {
        "report.txt": _report(run, rows),
        "labeled.csv": _labeled_csv(rows),
        "errors.txt": "".join(_block(r) for r in wrong),
        "correct.txt": "".join(_block(r) for r in right),
    }


def write_run_files(run: JudgeRun) -> Path:
    """Write all four files atomically (temp file + rename), so a reader never sees half a file.
    Each writer has temp files of its own: the worker that ends the run and a download that finds
    the files missing may write at once (a shared temp name made the second rename fail)."""
    d = run_dir(run)
    d.mkdir(parents=True, exist_ok=True)
    for name, text in render_run_files(run).items():
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=d, prefix=f".{name}.", suffix=".tmp",
                                         delete=False) as tmp:
            tmp.write(text)
        os.chmod(tmp.name, 0o644)  # as write_text under the usual umask left them (temp files are 0600)
        os.replace(tmp.name, d / name)
    return d


def run_file(run: JudgeRun, name: str) -> Path:
    if name not in RUN_FILES:
        raise FileNotFoundError(name)
    path = run_dir(run) / name
    # Missing, or older than the run's end (left by a database that was reset): write them again.
    ended = run.finished_at.timestamp() if run.finished_at else None
    if not path.exists() or ended is None or path.stat().st_mtime < ended:
        write_run_files(run)
    return path
