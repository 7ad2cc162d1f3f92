"""simulate_study: perfect agreement without noise, a planted position effect that the report
shows, determinism for a seed, and malformed judge answers counted as unparsed."""

from __future__ import annotations

import io
from collections import Counter, defaultdict

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Rating, Study
from annotation.reports.study import study_report
from judges.models import JudgeRun, JudgeScore
from judges.simulation import MALFORMED

pytestmark = pytest.mark.django_db(transaction=True)


def simulate(*args: str) -> str:
    out = io.StringIO()
    call_command("simulate_study", *args, "--worker", "no", stdout=out)
    return out.getvalue()


def ratings_by_rater(slug: str) -> dict[tuple, dict[str, object]]:
    """(item, output position, criterion) -> {rater username: value}."""
    out: dict[tuple, dict[str, object]] = defaultdict(dict)
    for r in Rating.objects.filter(assignment__study__slug=slug).select_related("assignment__rater", "assignment__item",
                                                                               "output"):
        key = (r.assignment.item.external_id, r.output.position if r.output else None, r.criterion)
        out[key][r.assignment.rater.username.rsplit("-", 1)[-1]] = r.value
    return out


@pytest.mark.parametrize("preset", ["rrgen-001", "aqua-003"])
def test_no_noise_and_no_bias_give_perfect_agreement(preset):
    simulate("--preset", preset, "--items", "8", "--raters", "3", "--judges", "0", "--noise", "0",
             "--rater-bias", "0", "--slug", "perfect")
    by_unit = ratings_by_rater("perfect")
    assert by_unit, "no ratings were stored"
    for key, values in by_unit.items():
        assert len(values) == 3 and len({str(v) for v in values.values()}) == 1, (key, values)
    report = study_report(Study.objects.get(slug="perfect"), n_boot=0)
    alphas = {k: a["alpha"]["value"] for k, a in report["agreement"].items()}
    assert alphas and all(v == pytest.approx(1.0) for v in alphas.values()), alphas


def test_noise_lowers_agreement():
    simulate("--preset", "rrgen-001", "--items", "12", "--judges", "0", "--noise", "1.0", "--slug", "noisy")
    report = study_report(Study.objects.get(slug="noisy"), n_boot=0)
    alpha = report["agreement"]["fluency"]["alpha"]["value"]
    assert alpha < 0.9


def _first_minus_rest(slug: str, key: str) -> float:
    effects = study_report(Study.objects.get(slug=slug), n_boot=0)["position_effects"][key]
    rest = [e["mean"] for p, e in effects.items() if p != "1"]
    return effects["1"]["mean"] - sum(rest) / len(rest)


def test_a_planted_position_effect_shows_in_the_position_report():
    common = ["--preset", "codegen-002", "--items", "15", "--judges", "0", "--noise", "0.3", "--seed", "4"]
    simulate(*common, "--slug", "no-order-effect")
    simulate(*common, "--position-bias", "1.5", "--slug", "order-effect")
    for key in ("technical_quality", "aesthetic_quality"):
        planted = _first_minus_rest("order-effect", key)
        control = _first_minus_rest("no-order-effect", key)
        assert planted > 0.8, planted
        assert planted - control > 0.8, (planted, control)


def _judge_values(slug: str) -> list[tuple]:
    rows = JudgeScore.objects.filter(run__study__slug=slug).values_list(
        "run__config__model", "item__external_id", "output__position", "criterion", "value", "status")
    return sorted(rows, key=str)


def test_the_same_seed_gives_the_same_study():
    args = ["--preset", "feedback-000", "--items", "5", "--raters", "2", "--judges", "1", "--seed", "11",
            "--malformed", "0.2"]
    simulate(*args, "--slug", "same-a")
    simulate(*args, "--slug", "same-b")
    simulate(*args[:-4], "--seed", "12", "--malformed", "0.2", "--slug", "other-seed")
    a, b, c = ratings_by_rater("same-a"), ratings_by_rater("same-b"), ratings_by_rater("other-seed")
    assert a == b and len(a) > 0
    assert a != c
    reasoning = sorted(Rating.objects.filter(assignment__study__slug="same-a").values_list("reasoning", flat=True))
    assert reasoning == sorted(Rating.objects.filter(assignment__study__slug="same-b").values_list("reasoning", flat=True))
    assert _judge_values("same-a") == _judge_values("same-b") and _judge_values("same-a")
    assert _judge_values("same-a") != _judge_values("other-seed")


@pytest.mark.parametrize("preset, share", [("aqua-003", 0.3), ("fulltext-004", 0.25), ("feedback-000", 0.0)])
def test_malformed_answers_are_kept_raw_and_counted_unparsed(preset, share):
    simulate("--preset", preset, "--items", "16", "--judges", "1", "--malformed", str(share), "--slug", "broken")
    run = JudgeRun.objects.get(study__slug="broken")
    scores = JudgeScore.objects.filter(run=run)
    broken = scores.filter(raw_text=MALFORMED)
    assert run.status == "done" and run.n_error == 0
    assert run.n_unparsed == scores.filter(status="unparsed").count() == broken.count()
    assert set(broken.values_list("status", flat=True)) <= {"unparsed"}
    assert not broken.exclude(value=None).exists()  # unparsed is never a score
    assert run.n_scored + run.n_unparsed == run.n_expected
    if share == 0:
        assert run.n_unparsed == 0
    else:  # one answer per slot for these methods: the share shows (loosely: 16+ draws)
        assert 0 < run.n_unparsed / run.n_expected < min(1.0, share * 2.5)


def test_judged_values_follow_the_truth():
    """A judge without noise or bias answers what raters without noise or bias answer."""
    simulate("--preset", "rrgen-001", "--items", "6", "--judges", "1", "--noise", "0", "--rater-bias", "0",
             "--malformed", "0", "--slug", "truthful")
    humans = {k: next(iter(v.values())) for k, v in ratings_by_rater("truthful").items()}
    judged = {(item, pos, crit): value for _, item, pos, crit, value, status in _judge_values("truthful")}
    assert judged and all(status == "scored" for *_, status in _judge_values("truthful"))
    shared = set(humans) & set(judged)
    assert len(shared) >= len(judged) * 0.8  # all but the ignored reviews
    def same(a, b) -> bool:  # a judge's 5.0 is a rater's 5
        return str(a) == str(b) or (isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b)

    assert [(k, humans[k], judged[k]) for k in shared if not same(humans[k], judged[k])] == []


def test_bad_arguments_are_refused_with_the_reason():
    with pytest.raises(CommandError, match="--noise"):
        simulate("--preset", "rrgen-001", "--noise", "-1")
    with pytest.raises(CommandError, match="--malformed"):
        simulate("--preset", "rrgen-001", "--malformed", "2")
    simulate("--preset", "aqua-003", "--items", "2", "--judges", "0", "--slug", "taken")
    with pytest.raises(CommandError, match="already exists"):
        simulate("--preset", "aqua-003", "--slug", "taken")
    assert Study.objects.filter(slug="taken").count() == 1


def test_judge_chunks_go_through_a_celery_worker(celery_worker_session):
    """With a worker on the `judges` queue, the runs' chunks travel through Redis to it."""
    from judges.simulation import worker_listening

    out = io.StringIO()
    call_command("simulate_study", "--preset", "aqua-003", "--items", "6", "--judges", "2", "--malformed", "0",
                 "--slug", "via-worker", "--worker", "yes", stdout=out)
    runs = JudgeRun.objects.filter(study__slug="via-worker")
    assert [r.status for r in runs] == ["done", "done"]
    assert all(r.n_scored == r.n_expected == 6 for r in runs)
    assert "2 raters" not in out.getvalue() and "done" in out.getvalue()
    assert worker_listening()  # what --worker auto would have found


def test_fewer_raters_per_item_than_raters_share_the_work():
    simulate("--preset", "fulltext-004", "--items", "9", "--raters", "3", "--raters-per-item", "2", "--judges", "0",
             "--slug", "shared")
    from annotation.models import Assignment

    per_rater = Counter(Assignment.objects.filter(study__slug="shared", status="submitted")
                        .values_list("rater__username", flat=True))
    per_item = Counter(Assignment.objects.filter(study__slug="shared", status="submitted")
                       .values_list("item__external_id", flat=True))
    assert set(per_item.values()) == {2} and len(per_item) == 9
    # Taking turns shares the 18 ratings out (the engine's random order may leave one rater a little short).
    assert sum(per_rater.values()) == 18 and len(per_rater) == 3
    assert max(per_rater.values()) - min(per_rater.values()) <= 2
