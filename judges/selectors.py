"""Reads for judges: runs of a study and their live progress."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Max, Sum
from django.utils import timezone

from annotation.models import Study
from judges.models import JudgeConfig, JudgeRun, JudgeScore


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
    """From the run's live counters: one row, however many scores the run has."""
    done = run.n_done
    end = run.finished_at or timezone.now()
    elapsed = (end - run.started_at).total_seconds() if run.started_at else None
    rate = done / elapsed if elapsed and elapsed > 0 and done else None
    remaining = max(run.n_expected - done, 0)
    eta = remaining / rate if rate and run.status in JudgeRun.ACTIVE else None
    return RunProgress(run.pk, run.status, run.n_expected, done, run.n_scored, run.n_unparsed, run.n_refusal,
                       run.n_error, run.tokens_in, run.tokens_out, float(run.cost_usd), elapsed, rate, eta,
                       truncated=run.n_truncated)


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


@dataclass
class StudyJudges:
    """One study's block on the Judges page: each judge that ran on it, with its latest run."""

    study: Study | None  # None: the judges that have not run on any study yet
    rows: list[dict] = field(default_factory=list)

    @property
    def cost_usd(self) -> float:
        return sum(r["cost_usd"] for r in self.rows)


def judges_by_study() -> list[StudyJudges]:
    """Every judge configuration under each study it ran on (newest study first), then those never run;
    per (study, judge): runs, total cost and the latest run. Three queries whatever the number of runs."""
    configs = {j.pk: j for j in JudgeConfig.objects.all()}
    groups = (JudgeRun.objects.values("study_id", "judge_id", "config__name").order_by()
              .annotate(n_runs=Count("id"), cost_usd=Sum("cost_usd"), last_id=Max("id")))
    latest = JudgeRun.objects.select_related("study").in_bulk([g["last_id"] for g in groups])
    by_study: dict[int, StudyJudges] = {}
    used: set[int] = set()
    for g in sorted(groups, key=lambda g: -g["last_id"]):
        last = latest[g["last_id"]]
        block = by_study.setdefault(g["study_id"], StudyJudges(last.study))
        judge = configs.get(g["judge_id"])
        used.add(g["judge_id"])
        block.rows.append({"judge": judge, "name": judge.name if judge else g["config__name"] or "?",
                           "config": last.config, "n_runs": g["n_runs"], "cost_usd": g["cost_usd"] or 0.0,
                           "last": last})
    out = sorted(by_study.values(), key=lambda b: -max(r["last"].pk for r in b.rows))
    for block in out:
        block.rows.sort(key=lambda r: r["name"])
    unused = [{"judge": j, "name": j.name, "config": None, "n_runs": 0, "cost_usd": 0.0, "last": None}
              for pk, j in sorted(configs.items(), key=lambda kv: kv[1].name) if pk not in used]
    if unused:
        out.append(StudyJudges(None, unused))
    return out


@dataclass(frozen=True)
class JudgeChoice:
    """One judge as the run form offers it on a study."""

    judge: JudgeConfig
    fits: bool  # it can score the study's rubric
    note: str  # why it cannot, or the protocol it was made for; "" when it plainly fits
    rank: int  # 0 ran on this rubric, 1 never ran, 2 made for another rubric, 3 cannot score it


def _cannot_score(judge: JudgeConfig, study: Study) -> str:
    """Why `judge` cannot score the study's rubric ("" when it can): its criteria, its label or
    comparison key, or its prompts do not fit."""
    from judges.plan import JudgePlan
    from judges.services.run_keys import run_key_parts
    from judges.services.runs import judge_config_dict

    config = judge_config_dict(judge)
    rubric = study.rubric
    try:
        plan = JudgePlan.build(config, rubric)
        criteria = plan.criteria
        known = {c["key"] for c in rubric.get("criteria", [])}
        missing = [k for k in criteria if k not in known]
        if missing:
            return f"it scores {', '.join(missing)}, which this rubric does not have"
        run_key_parts(plan, rubric, criteria, study.rubric_version_id)  # renders its prompts for the rubric
    except (ValueError, KeyError) as exc:
        return str(exc) or type(exc).__name__
    return ""


def judges_for_study(study: Study) -> list[JudgeChoice]:
    """Every judge for the study's run form, those that fit first: the ones that ran on this
    rubric, then the ones never run, then those made for another rubric (every run of theirs is on
    studies of other protocols), then the ones that cannot score it, each saying why."""
    rubric_id = study.rubric_version.rubric_id
    ran_on: dict[int, dict[int, str]] = {}
    for judge_id, rid, slug in (JudgeRun.objects.filter(judge__isnull=False).order_by()
                                .values_list("judge_id", "study__rubric_version__rubric_id",
                                             "study__rubric_version__rubric__slug").distinct()):
        ran_on.setdefault(judge_id, {})[rid] = slug
    out = []
    for judge in JudgeConfig.objects.all():
        why = _cannot_score(judge, study)
        rubrics = ran_on.get(judge.pk, {})
        if why:
            out.append(JudgeChoice(judge, False, f"cannot score this rubric: {why}", 3))
        elif rubric_id in rubrics:
            out.append(JudgeChoice(judge, True, "", 0))
        elif not rubrics:
            out.append(JudgeChoice(judge, True, "", 1))
        else:
            out.append(JudgeChoice(judge, True, f"made for {', '.join(sorted(rubrics.values()))}", 2))
    return sorted(out, key=lambda c: (c.rank, c.judge.name))


def study_jury(study: Study, criterion: str | None = None) -> list[tuple[int, int, list[float | None]]]:
    """(item id, output id, each judge's score) of every output scored on `criterion` (default: the
    study's active_inference criterion, else its first likert or numeric one), one column per judge: the
    latest finished run of each judge configuration (juries left out: their members are the jury here).
    What annotation.services.active_inference reads as the judges' disagreement."""
    criterion = criterion or (study.sampling_policy or {}).get("criterion") or next(
        (c["key"] for c in study.rubric["criteria"] if c["kind"] in ("likert", "numeric")), None)
    if criterion is None:
        return []
    latest: dict[int, JudgeRun] = {}
    for run in (JudgeRun.objects.filter(study=study, status__in=JudgeRun.FINISHED, judge__isnull=False)
                .exclude(config__has_key="members").order_by("judge_id", "-pk")):
        latest.setdefault(run.judge_id, run)
    runs = list(latest.values())
    column = {run.pk: k for k, run in enumerate(runs)}
    rows: dict[tuple[int, int], list[float | None]] = {}
    scores = (JudgeScore.objects.filter(run__in=runs, criterion=criterion, output__isnull=False,
                                        score__isnull=False, status=JudgeScore.Status.SCORED)
              .values_list("item_id", "output_id", "run_id", "score"))
    for item, output, run, score in scores:
        rows.setdefault((item, output), [None] * len(runs))[column[run]] = score
    return [(item, output, values) for (item, output), values in sorted(rows.items())]
