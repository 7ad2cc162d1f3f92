"""Gold evaluation of labels (seed 003, AQUA): accuracy, macro F1, per-class P/R/F1,
confusion matrix, binary accuracy/F1 of one positive class against the rest, cost per 10K.

Matches sklearn: macro F1 and the per-class figures are over the task's labels (sklearn's
`labels=`; without them the sorted union of gold and predicted labels); a 0/0 precision or
recall counts as 0 (sklearn's zero_division default, without the warning).

A prediction the judge failed to give (missing id, empty, "Error", a label outside the
known set) is the label FAILED: wrong in every metric. It is a column of the confusion
matrix but not a class of the task, so it lowers the recall (and F1) of its gold class and
never adds a class of F1 0 to the macro average (seed 003 averages over its four labels);
in the binary metrics it is the opposite of the gold answer, so a failure never passes as
a correct "rest".
`gold_eval` is the one function behind `gold_eval`, the gold page and a run's report.txt.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

FAILED = "Error"


def _prf(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        recall = np.where(tp + fn > 0, tp / (tp + fn), 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    return precision, recall, f1


def confusion(gold: Sequence[str], pred: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """(labels, matrix) with rows = gold, columns = predicted."""
    labels, inv = np.unique(np.concatenate([np.asarray(gold, dtype=str), np.asarray(pred, dtype=str)]),
                            return_inverse=True)
    n, size = len(gold), labels.size
    matrix = np.bincount(inv[:n] * size + inv[n:], minlength=size * size).reshape(size, size)
    return [str(x) for x in labels], matrix


def classification_report(gold: Sequence[str], pred: Sequence[str], *, positive: str = "TP",
                          cost: Sequence[float] | None = None, labels: Sequence[str] | None = None
                          ) -> dict[str, Any]:
    """All metrics of aligned gold and predicted labels (plain floats, JSON-ready); macro F1 and
    per_class over `labels` (the task's classes) when given.

    Reference: Sokolova & Lapalme (2009), Information Processing & Management 45(4).
    """
    if len(gold) != len(pred):
        raise ValueError("gold and pred must be aligned (same length)")
    n = len(gold)
    if n == 0:
        raise ValueError("no labelled items to evaluate")
    task = [str(x) for x in labels] if labels else None
    labels, cm = confusion(list(gold) + (task or []), list(pred) + (task or []))
    if task:  # the task's labels were counted once on the diagonal to give them a row and column
        index = [labels.index(lab) for lab in task]
        cm = cm - np.diag(np.isin(labels, task).astype(int))
    tp = np.diag(cm).astype(float)
    fp = cm.sum(axis=0) - tp
    fn = cm.sum(axis=1) - tp
    precision, recall, f1 = _prf(tp, fp, fn)
    g = np.asarray(gold, dtype=str) == positive
    failed = np.asarray(pred, dtype=str) == FAILED
    p = np.where(failed, ~g, np.asarray(pred, dtype=str) == positive)
    bp, br, bf = _prf(np.array([np.sum(g & p)], float), np.array([np.sum(~g & p)], float),
                      np.array([np.sum(g & ~p)], float))
    classes = index if task else list(range(len(labels)))
    report: dict[str, Any] = {
        "n": n,
        "accuracy": float(tp.sum() / n),
        "macro_f1": float(f1[classes].mean()),
        "per_class": {labels[i]: {"precision": float(precision[i]), "recall": float(recall[i]),
                                  "f1": float(f1[i]), "support": int(cm[i].sum())}
                      for i in classes},
        "confusion_matrix": {"labels": labels, "matrix": cm.tolist()},
        "binary": {"positive": positive, "accuracy": float(np.mean(g == p)),
                   "precision": float(bp[0]), "recall": float(br[0]), "f1": float(bf[0])},
        "cost_total": None,
        "cost_per_10k": None,
    }
    if cost is not None:
        total = float(np.nansum(np.asarray(cost, dtype=float)))
        report["cost_total"] = total
        report["cost_per_10k"] = total / n * 10_000  # extrapolated from the evaluated rows (seed 003)
    return report


def is_failed(label: str | None, known: set[str] | frozenset[str]) -> bool:
    """No usable prediction: none, empty, "Error", or a label outside the known set."""
    if label is None:
        return True
    text = str(label).strip()
    return not text or text.lower() == FAILED.lower() or text not in known


def gold_eval(gold: Mapping[str, str], pred: Mapping[str, str], *, positive: str = "TP",
              cost: Mapping[str, float] | None = None, labels: Sequence[str] | None = None) -> dict[str, Any]:
    """Evaluate predictions keyed by id against gold keyed by id, over every gold id.

    A gold id absent from `pred` is missing, a prediction that is empty, "Error" or outside
    `labels` (default: the gold labels) is unparsed; both count as the wrong label FAILED.
    Cost per 10K is extrapolated from the ids that have a prediction row (a missing one has
    no cost to count); predicted ids not in gold are listed and not scored.

    Reference: Sokolova & Lapalme (2009); seed 003's evaluation table.
    """
    known = frozenset(str(x) for x in labels) if labels else frozenset(str(x) for x in gold.values())
    ids = list(gold)
    missing = [i for i in ids if i not in pred]
    unparsed = [i for i in ids if i in pred and is_failed(pred[i], known)]
    bad = set(missing) | set(unparsed)
    y_pred = [FAILED if i in bad else str(pred[i]).strip() for i in ids]
    report = classification_report([str(gold[i]) for i in ids], y_pred, positive=positive, labels=sorted(known))
    present = [i for i in ids if i in pred]
    if cost is not None and present:
        total = float(np.nansum(np.asarray([cost.get(i, 0.0) for i in present], dtype=float)))
        report["cost_total"] = total
        report["cost_per_10k"] = total / len(present) * 10_000  # extrapolated from usage (seed 003)
    report.update(labels=sorted(known), n_predicted=len(present), missing=len(missing), unparsed=len(unparsed),
                  missing_predictions=missing, unparsed_predictions=unparsed,
                  unknown_ids=[i for i in pred if i not in gold])
    return report


def seed_table(report: Mapping[str, Any], *, method: str, n_classes: int = 4) -> list[str]:
    """Seed 003's benchmark table (markdown) for one evaluated method, as lines of text:
    the gold_eval command and a judge run's report.txt print the same row."""
    acc = f"{n_classes}-class Acc" if n_classes else "Acc"
    cost = report.get("cost_per_10k")
    return [f"| Method | {acc} | Macro F1 | Binary Acc | Binary F1 | Cost/10K |",
            "|---|---:|---:|---:|---:|---:|",
            f"| {method} | {report['accuracy']:.3f} | {report['macro_f1']:.3f} | {report['binary']['accuracy']:.3f} "
            f"| {report['binary']['f1']:.3f} | {'-' if cost is None else f'${cost:.2f}'} |",
            f"n = {report['n']}  binary: {report['binary']['positive']} vs rest  "
            "cost per 10K extrapolated from the rows with a prediction"]
