"""Gold evaluation of judge runs (seed 003): accuracy, macro F1, binary accuracy/F1, cost per 10K.

Ids are item ids for single-output items and `<item id>#<output position>` otherwise.
A slot the judge failed on (unparsed, refusal, error) or never scored counts as the label
"Error", so failures lower the scores instead of silently dropping out of them. The
figures come from annotation.stats.classification.gold_eval, the same function as the
`gold_eval` command and the run's report.txt. Cost counts cached answers at what they
would have cost (seed 003's cost per 10K is the method's price, not this rerun's).
"""

from __future__ import annotations

import io
from typing import Any, Iterable, Mapping, Sequence

from django.db.models import Count

from annotation.models import Output, Study
from annotation.stats.classification import FAILED, gold_eval, seed_table  # noqa: F401 (seed_table: one format)
from annotation.stats.gold import answer_text, gold_for
from annotation.stats.tables import TableError, read_labels
from judges.models import JudgeRun, JudgeScore



class GoldError(ValueError):
    pass


def output_key(external_id: str, position: int, n_outputs: int) -> str:
    return external_id if n_outputs == 1 else f"{external_id}#{position}"


def _outputs(study: Study) -> list[tuple[str, int, int, Any]]:
    """(item external id, output position, n outputs of the item, item gold) per output."""
    rows = list(Output.objects.filter(item__study=study, item__is_attention_check=False)
                .values_list("item__external_id", "position", "item_id", "item__gold").order_by("item_id", "position"))
    n: dict[int, int] = {}
    for _, _, item_id, _ in rows:
        n[item_id] = n.get(item_id, 0) + 1
    return [(ext, pos, n[item_id], gold) for ext, pos, item_id, gold in rows]


def gold_value(gold: Mapping[str, Any] | None, criterion: str, position: int | None) -> str | None:
    """An item's gold for one output (position None: for the item), as text; None where the gold
    names none. The rule of the report's gold accuracy too (annotation.stats.gold)."""
    return gold_for((gold or {}).get(criterion), position)


def gold_from_items(study: Study, criterion: str) -> dict[str, str]:
    out = {}
    for ext, pos, n, gold in _outputs(study):
        value = gold_value(gold, criterion, pos)
        if value is not None:
            out[output_key(ext, pos, n)] = value
    return out


def gold_from_csv(data: bytes | str) -> dict[str, str]:
    """id -> label from an uploaded CSV (columns id,label); GoldError naming the row and column."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise GoldError(f"the file is not UTF-8 text (byte {exc.start})") from exc
    try:
        labels, _ = read_labels(io.StringIO(text))
    except TableError as exc:
        raise GoldError(str(exc)) from exc
    return labels


def predictions(run: JudgeRun, criterion: str) -> tuple[dict[str, str], dict[str, float]]:
    """(key -> predicted label, key -> cost of judging that output, all criteria of the run)."""
    pred: dict[str, str] = {}
    cost: dict[str, float] = {}
    rows = (JudgeScore.objects.filter(run=run, output__isnull=False)
            .values_list("item__external_id", "item_id", "output__position", "criterion", "value", "status",
                         "cost_usd", "detail"))
    counts = dict(Output.objects.filter(item__study_id=run.study_id).values("item_id")
                  .annotate(n=Count("id")).values_list("item_id", "n"))
    for ext, item_id, pos, crit, value, status, c, detail in rows:
        key = output_key(ext, pos, counts.get(item_id, 1))
        cost[key] = cost.get(key, 0.0) + list_cost(c, detail)
        if crit == criterion:
            pred[key] = answer_text(value) if status == "scored" and value is not None else FAILED
    return pred, cost


def list_cost(cost_usd: float | None, detail: Mapping[str, Any] | None) -> float:
    """What a slot cost, with its cached calls at what they would have cost."""
    return float(cost_usd or 0.0) + float((detail or {}).get("cached_cost_usd") or 0.0)


def choice_labels(study: Study, criterion: str) -> list[str] | None:
    for c in label_criteria(study):
        if c["key"] == criterion and c.get("choices"):
            return [str(ch["value"]) for ch in c["choices"]]
    return None


def label_criteria(study: Study) -> list[dict]:
    return [c for c in study.rubric.get("criteria", []) if c.get("kind") in ("choice", "binary")]


def default_positive(study: Study, criterion: str) -> str:
    for c in label_criteria(study):
        if c["key"] == criterion and c.get("choices"):
            return str(c["choices"][0]["value"])
    return "TP"


def evaluate_runs(runs: Iterable[JudgeRun], gold: Mapping[str, str], criterion: str,
                  positive: str) -> list[dict[str, Any]]:
    """One row per run (seed 003's table): method, judge, n, metrics, cost per 10K, missing and
    unparsed counts (both scored as wrong)."""
    rows = []
    for run in runs:
        if criterion not in (run.criteria or []):
            continue
        pred, cost = predictions(run, criterion)
        row: dict[str, Any] = {"run": run, "judge": run.name, "method": run.config.get("method"),
                               "model": run.config.get("model"), "n": len(gold),
                               "missing": len([i for i in gold if i not in pred]),
                               "unknown": len([i for i in pred if i not in gold])}
        if any(i in pred for i in gold):
            report = gold_eval(gold, pred, positive=positive, cost=cost, labels=choice_labels(run.study, criterion))
            cm = report["confusion_matrix"]
            report["confusion_rows"] = [[lab, *row] for lab, row in zip(cm["labels"], cm["matrix"])]
            row.update(report=report, accuracy=report["accuracy"], macro_f1=report["macro_f1"],
                       binary_accuracy=report["binary"]["accuracy"], binary_f1=report["binary"]["f1"],
                       cost_per_10k=report["cost_per_10k"], unparsed=report["unparsed"])
        rows.append(row)
    return rows


def evaluation_table(study: Study, runs: Sequence[JudgeRun], *, criterion: str | None = None,
                     gold: Mapping[str, str] | None = None, positive: str | None = None) -> dict[str, Any]:
    crits = label_criteria(study)
    if criterion is None:
        if not crits:
            raise GoldError("this study's rubric has no label (choice or binary) criterion to evaluate")
        criterion = crits[0]["key"]
    source = "upload" if gold is not None else "items"
    gold = dict(gold) if gold is not None else gold_from_items(study, criterion)
    if not gold:
        raise GoldError(f"no gold labels for {criterion!r}: upload a CSV with columns id,label")
    positive = positive or default_positive(study, criterion)
    return {"criterion": criterion, "positive": positive, "n_gold": len(gold), "source": source,
            "rows": evaluate_runs(runs, gold, criterion, positive)}


def ensemble_weights_from_gold(study: Study, judge_names: Sequence[str]) -> list[float]:
    """Seed 003's learnt ensemble weights: each judge's accuracy against the study's gold
    labels in its own latest finished run here, not as part of an ensemble (so each member
    must have run once alone)."""
    from judges.methods.ensemble import learn_weights

    crits = label_criteria(study)
    if not crits:
        raise GoldError("weights: gold needs a label (choice or binary) criterion in the rubric")
    criterion = crits[0]["key"]
    gold = gold_from_items(study, criterion)
    if not gold:
        raise GoldError(f"weights: gold needs gold labels for {criterion!r} on the study's items")
    preds = []
    for name in judge_names:
        run = (JudgeRun.objects.filter(study=study, config__name=name, status__in=JudgeRun.FINISHED)
               .exclude(config__has_key="members").order_by("-finished_at").first())  # its run alone
        if run is None:
            raise GoldError(f"weights: gold needs a finished run of judge {name!r} on this study "
                            "(run it alone once; its cached answers make the ensemble's calls free)")
        pred, _ = predictions(run, criterion)
        preds.append({k: (None if v == FAILED else v) for k, v in pred.items()})
    weights = learn_weights(preds, gold)
    if not any(w > 0 for w in weights):
        raise GoldError("weights: gold: every member is wrong on every gold label, so no weight is above 0")
    return weights


def method_title(config: Mapping[str, Any]) -> str:
    """A run's row name in seed 003's table, e.g. "escalation (mini→4o→o3)"."""
    method = config.get("method")
    if config.get("members"):
        return f"{method} weighted ensemble ({', '.join(m.get('name', '?') for m in config['members'])})"
    if config.get("stages"):
        chain = "→".join(str(st.get("model")) for st in config["stages"])
        router = (config.get("method_options") or {}).get("router") or "deterministic"
        return f"{method} ({chain}, {router} router)"
    return f"{method} ({config.get('model')})"
