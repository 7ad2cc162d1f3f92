"""Reads for judges: runs of a study and their live progress."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from annotation.models import Study
from judges.models import JudgeRun
from judges.services.runs import run_totals


@dataclass(frozen=True)
class RunProgress:
    run_id: int
    status: str
    expected: int
    done: int
    scored: int
    unparsed: int
    refusal: int
    error: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    elapsed_s: float | None
    rate: float | None  # slots per second since the run started
    eta_s: float | None
    truncated: int = 0  # answers cut off by the token cap

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.expected if self.expected else 0.0

    @property
    def active(self) -> bool:
        return self.status in JudgeRun.ACTIVE

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["percent"] = round(self.percent, 2)
        return d


def run_progress(run: JudgeRun) -> RunProgress:
    t = run_totals(run)
    end = run.finished_at or timezone.now()
    elapsed = (end - run.started_at).total_seconds() if run.started_at else None
    rate = t["done"] / elapsed if elapsed and elapsed > 0 and t["done"] else None
    remaining = max(run.n_expected - t["done"], 0)
    eta = remaining / rate if rate and run.status in JudgeRun.ACTIVE else None
    return RunProgress(run.pk, run.status, run.n_expected, t["done"], t["scored"], t["unparsed"], t["refusal"],
                       t["error"], t["tokens_in"], t["tokens_out"], float(t["cost"]), elapsed, rate, eta,
                       truncated=t["truncated"])


def study_runs(study: Study) -> list[JudgeRun]:
    return list(JudgeRun.objects.filter(study=study).select_related("judge").order_by("-created_at"))


def run_key_comparison(run: JudgeRun) -> dict:
    """The run's key, and what differs from the previous run of the same judge on the study
    (or from the run whose scores it reused)."""
    from judges.services.run_keys import key_differences

    previous = (JudgeRun.objects.filter(study_id=run.study_id, config__name=run.name, created_at__lt=run.created_at)
                .exclude(pk=run.pk).order_by("-created_at").only("pk", "key", "key_parts").first())
    return {"short": run.key[:10], "reused_from": run.reused_from_id,
            "previous": previous.pk if previous else None,
            "same_as_previous": bool(previous and previous.key and previous.key == run.key),
            "differs": key_differences(previous.key_parts, run.key_parts) if previous else []}
