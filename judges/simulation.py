"""Simulated LLM judges: real judge runs (Celery chunks, backend, parsing) against the loopback
OpenAI-compatible server (judges/fakeserver.py), which answers each prompt as a judge would.

    simulated_judges_run(study=..., preset=..., n_judges=2, knobs=..., seed=0, worker="auto") -> [JudgeRun]

`StudyResponder` rebuilds, with the same prompt builders the methods use, every prompt a run of
the preset's method can send, so it knows for each prompt which output and criterion it is about
and which output format it asks for. Judge k (model `sim-judge-k`) answers from the output's
latent truth with its own bias and noise (annotation.simulation.latent), in that format; a share
`knobs.malformed` of answers carries no verdict, which the parser must count as unparsed. The
comparative prompts (pairwise pairs in both orders, the ranking's two orders, the best-worst
tuples, with the methods' default options) are answered from the shown outputs' perceived
quality, the first shown getting the study's position bias as a human rater's would. A trajectory
output's prompts (judges.methods.trajectory: the whole run, one step, or every step in one structured
call) are answered question by question as the simulated raters answer them, from the truth the
agent simulation planted where it planted one (annotation.simulation.raters.planted_value).

Chunks run on a Celery worker when one consumes the `judges` queue (worker="yes", or "auto" and a
worker answers a ping); otherwise (worker="no", or "auto" with none) the same task runs in this
process through Celery's eager mode. Either way the fake server lives in this process, on
127.0.0.1, for as long as the runs take.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from typing import Any, Iterator, Mapping, Sequence

from django.db import transaction

from annotation import step_questions
from annotation.models import Item, Study
from annotation.simulation.agent import PRESET as AGENT_PRESET
from annotation.simulation.comparative import TIE_BAND
from annotation.simulation.items import system_effect
from annotation.simulation.latent import Knobs, output_quality, perceived, unit
from annotation.simulation.raters import planted_value, value_for
from judges.fakeserver import running_fake_server
from judges.models import JudgeRun
from judges.methods.best_worst import design
from judges.methods.ranking import shown_order
from judges.prompts import trajectory as trajectory_prompts
from judges.prompts import Prompt, build_all_criteria, build_best_worst, build_criterion, build_label, build_pairwise, build_ranking
from judges.prompts.base import LABEL_KINDS, judgeable
from judges.prompts.feedback_000 import output_names
from judges.services.configs import judge_config_save
from judges.services.engine import comparative_key, tuple_size
from judges.services.runs import item_payload, judge_run_start
from rubrics.schema import step_kinds

# The method each preset's judges use: the seed's own prompt shape (000: one block for every
# criterion; 003: a label per edit; 004: one prompt per dimension; 001/002: one JSON per output).
METHODS = {"feedback-000": "all_in_one", "rrgen-001": "all_in_one", "codegen-002": "all_in_one",
           "aqua-003": "label", "fulltext-004": "per_criterion",
           # Concord's comparative presets: pairs both ways; best-worst tuples from the humans' design
           "compare-pairwise": "pairwise", "compare-ranking": "best_worst",
           # the agent study's trajectories: as chat messages with tool calls, per step where the rubric asks
           AGENT_PRESET: "per_criterion"}
MALFORMED = ("I have read the response with care. It has clear strengths and some weaknesses, "
             "and on balance it sits somewhere in the middle of the rubric.")


def judge_model(k: int) -> str:
    return f"sim-judge-{k}"


def _key(prompt: Prompt) -> str:
    return "\n\n".join(m.get("content") or "" for m in prompt.messages)  # as judges.fakeserver joins them


class StudyResponder:
    """(prompt, model) -> the simulated judge's answer for the prompts of one study; None for others."""

    def __init__(self, *, study: Study, preset: str, knobs: Knobs, seed: int):
        self.preset, self.knobs, self.seed = preset, knobs, seed
        self.rubric = study.rubric
        self.criteria = {c["key"]: c for c in judgeable(self.rubric)}
        self.prompts: dict[str, tuple[str, int, str, Prompt]] = {}
        # comparative prompts: (item id, [(position, system) of each output in the order shown], criterion, prompt)
        self.compared: dict[str, tuple[str, list[tuple[int, str]], str, Prompt]] = {}
        # trajectory prompts: (item id, position, system, truth, the questions it asks, prompt)
        self.trajectories: dict[str, tuple[str, int, str, dict, list[dict], Prompt]] = {}
        self.misses = 0  # prompts it did not know (answered by the fake server's default)
        items = Item.objects.filter(study=study, is_attention_check=False).prefetch_related("outputs")
        for item in items:
            outputs = sorted(item.outputs.all(), key=lambda o: o.position)
            payload = item_payload(item, outputs)
            for idx, out in enumerate(outputs):
                if out.kind == "trajectory":
                    truth = (out.metadata or {}).get("truth") or {}
                    for prompt, questions in self._trajectory_candidates(payload, idx):
                        self.trajectories[_key(prompt)] = (item.external_id, out.position, out.system, truth,
                                                           questions, prompt)
                    continue
                for prompt in self._candidates(payload, idx):
                    self.prompts[_key(prompt)] = (item.external_id, out.position, out.system, prompt)
            for shown, key, prompt in self._comparative_candidates(payload):
                self.compared[_key(prompt)] = (item.external_id, [(outputs[i].position, outputs[i].system)
                                                                  for i in shown], key, prompt)

    def _comparative_candidates(self, payload: dict) -> Iterator[tuple[list[int], str, Prompt]]:
        """Every prompt the comparative methods send about this item, with their default options."""
        n = len(payload["outputs"])
        if n < 2:
            return
        pair_keys = [c["key"] for c in self.rubric["criteria"] if c["kind"] == "pairwise"] + ["overall"]
        for a in range(n):
            for b in range(n):
                for key in pair_keys if a != b else ():
                    yield [a, b], key, build_pairwise(self.rubric, payload, a, b, None if key == "overall" else key)
        rank_key = comparative_key({"method": "ranking"}, self.rubric)
        first = shown_order(payload["id"], n, rank_key)
        for order in (first, first[::-1]):
            yield order, rank_key, build_ranking(self.rubric, payload, order, None if rank_key == "overall" else rank_key)
        bw_key = comparative_key({"method": "best_worst"}, self.rubric)
        size = tuple_size({"method": "best_worst"}, self.rubric, bw_key)
        for shown in design(payload["id"], n, size, bw_key):
            yield shown, bw_key, build_best_worst(self.rubric, payload, shown, None if bw_key == "overall" else bw_key)

    def _trajectory_candidates(self, payload: dict, idx: int) -> Iterator[tuple[Prompt, list[dict]]]:
        """Every prompt a trajectory judge sends about this output, with the questions it asks (each
        a criterion, or its per-step copy keyed as raters' ratings are: annotation.step_questions)."""
        out = payload["outputs"][idx]
        for c in self.criteria.values():
            questions = step_questions.asked(c, out["content"], "trajectory")
            if step_kinds(c) is None:
                yield trajectory_prompts.build(self.rubric, c, payload, out["content"]), questions
                continue
            for q in questions:
                yield trajectory_prompts.build(self.rubric, c, payload, out["content"], [q["step"]]), [q]
            if questions:
                yield trajectory_prompts.build(self.rubric, c, payload, out["content"], [q["step"] for q in questions],
                                               structured=True), questions

    def _candidates(self, payload: dict, idx: int) -> Iterator[Prompt]:
        yield build_all_criteria(self.rubric, payload, idx)
        for key, c in self.criteria.items():
            yield build_criterion(self.rubric, key, payload, idx)
            if c["kind"] in LABEL_KINDS:
                yield build_label(self.rubric, payload, idx, key)

    def __call__(self, prompt_text: str, model: str) -> str | None:
        found = self.prompts.get(prompt_text)
        compared = self.compared.get(prompt_text) if found is None else None
        steps = self.trajectories.get(prompt_text) if found is None and compared is None else None
        if found is None and compared is None and steps is None:
            self.misses += 1
            return None
        digest = hashlib.sha256(prompt_text.encode()).hexdigest()[:16]
        if unit(self.seed, "malformed", model, digest) < self.knobs.malformed:
            return MALFORMED
        if compared is not None:
            return self._compare(*compared, model=model)
        if steps is not None:
            return self._trajectory(*steps, model=model)
        item_id, position, system, prompt = found

        def value(key: str) -> Any:
            return value_for(self.criteria[key], seed=self.seed, preset=self.preset, item_id=item_id,
                             position=position, system=system, who=model, knobs=self.knobs, shown_first=False)

        return self._format(prompt, value)

    def _trajectory(self, item_id: str, position: int, system: str, truth: dict, questions: list[dict],
                    prompt: Prompt, *, model: str) -> str | None:
        """The judge's answer to each question a trajectory prompt asks, as a simulated rater gives it."""
        def answer(q: dict) -> Any:
            planted = planted_value(q, truth, seed=self.seed, who=model, knobs=self.knobs, item_id=item_id,
                                    position=position, shown_first=False)
            return planted if planted is not None else value_for(
                q, seed=self.seed, preset=self.preset, item_id=item_id, position=position, system=system,
                who=model, knobs=self.knobs, shown_first=False)

        if prompt.expects == "json_fields":  # one structured call: every step of the criterion
            fields = {q["step"]: answer(q) for q in questions}
            return json.dumps({**fields, "reasoning": "Each step judged in the context of the conversation."})
        return self._format(prompt, lambda _key: answer(questions[0]))

    def _compare(self, item_id: str, shown: list[tuple[int, str]], key: str, prompt: Prompt, *, model: str) -> str:
        """The judge's verdict on the outputs shown, from their perceived quality (truth + the
        judge's bias and noise + the position bias of the first shown)."""
        z = [perceived(output_quality(self.seed, system_effect(self.preset, system), item_id, position),
                       seed=self.seed, who=model, knobs=self.knobs, item_id=item_id, position=position,
                       criterion=key, shown_first=n == 0)
             for n, (position, system) in enumerate(shown)]
        best_first = sorted(range(1, len(z) + 1), key=lambda n: -z[n - 1])
        reason = "Judged on the criterion: the better responses are faithful, complete and clear."
        if prompt.expects == "pairwise":
            verdict = "C" if abs(z[0] - z[1]) < TIE_BAND else "A" if z[0] > z[1] else "B"
            return f"{reason}\n\n[[{verdict}]]"
        if prompt.expects == "ranking":
            return f"{reason}\n\n[[{' > '.join(map(str, best_first))}]]"
        return f"{reason}\n\n[[best: {best_first[0]}, worst: {best_first[-1]}]]"

    def _format(self, prompt: Prompt, value) -> str | None:
        reason = "The response is judged against the rubric's level descriptions for this criterion."
        if prompt.expects == "criteria_block":  # seed 000's Output Format
            names = output_names(self.rubric)
            scores = [f"- **{names[k]}**: {value(k)}" for k in names]
            reasons = [f"- **{names[k]}**: {reason}" for k in names if not self.criteria[k].get("overall")]
            return "\n".join(scores) + "\n\n**Reasoning:**\n\n" + "\n".join(reasons)
        if prompt.expects == "json_scores":
            answer = {k: value(k) for k in self.criteria}
            answer["reasoning"] = reason
            return json.dumps(answer)
        key = prompt.criterion or next((k for k, c in self.criteria.items() if c["kind"] in LABEL_KINDS), None)
        if key is None or key not in self.criteria:
            return None
        if prompt.expects == "label":
            return json.dumps({"label": value(key), "reason": reason})
        if prompt.expects == "json_score":  # seed 004's template: {"score":"xx","reason":"xx"}
            return json.dumps({"score": str(value(key)), "reason": reason})
        if prompt.expects == "first_line":
            return f"{value(key)}\n{reason}"
        return None


@contextlib.contextmanager
def eager_celery() -> Iterator[None]:
    """Run tasks sent from this process in it (the same task code a worker would run)."""
    from config.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = before


def worker_listening(queue: str = "judges", timeout_s: float = 1.0) -> bool:
    """Whether some Celery worker consumes `queue` now."""
    from config.celery import app

    try:
        replies = app.control.inspect(timeout=timeout_s).active_queues() or {}
    except Exception:  # the broker is unreachable: no worker either
        return False
    return any(q.get("name") == queue for queues in replies.values() for q in queues or [])


def simulated_judges_run(*, study: Study, preset: str, n_judges: int, knobs: Knobs, seed: int,
                         worker: str = "auto", timeout_s: float = 600.0,
                         methods: Sequence[str] = (), max_cost_usd: float | None = None,
                         method_options: Sequence[Mapping[str, Any]] = ()) -> list[JudgeRun]:
    """Start `n_judges` judge runs on the study and wait until they end; returns the runs. Judge k
    uses methods[k-1] when given (e.g. "geval": the score-token distribution), else the preset's,
    and method_options[k-1] besides its own when given (e.g. {"steps": "structured"}).
    `max_cost_usd`: each judge's cap per run (judges.services.budget)."""
    if n_judges < 1:
        return []
    if worker not in ("auto", "yes", "no"):
        raise ValueError("worker must be auto, yes or no")
    if transaction.get_connection().in_atomic_block:
        # Chunks are sent when the run's row commits; inside a caller's transaction that would be
        # after the fake server has stopped.
        raise RuntimeError("simulated_judges_run must not be called inside a transaction")
    use_worker = worker == "yes" or (worker == "auto" and worker_listening())
    responder = StudyResponder(study=study, preset=preset, knobs=knobs, seed=seed)
    pair_keys = [c["key"] for c in study.rubric["criteria"] if c["kind"] == "pairwise"]
    runs = []
    with running_fake_server(responder=responder) as server:
        judges = []
        for k in range(1, n_judges + 1):
            method = methods[k - 1] if k <= len(methods) else METHODS[preset]
            options: dict[str, Any] = {"use_cache": False, "chunk_size": 32,
                                       **(method_options[k - 1] if k <= len(method_options) else {})}
            if max_cost_usd is not None:
                options["max_cost_usd"] = max_cost_usd
            if method == "pairwise" and pair_keys:
                options["key"] = pair_keys[0]  # the rubric's own pairwise question, as its raters see it
            judge, _ = judge_config_save(data={
                "name": f"{study.slug}-judge-{k}"[:100], "backend": "openai", "model": judge_model(k),
                "endpoint": server.base_url, "method": method, "concurrency": 16,
                "description": f"Simulated judge {k} (loopback server; answers from the simulation's truth).",
                "price_in_per_m": 0.15 * k, "price_out_per_m": 0.60 * k,
                "backend_options": {"max_retries": 2, "timeout_s": 30},
                "method_options": options,
            })
            judges.append(judge)
        context = contextlib.nullcontext() if use_worker else eager_celery()
        with context:
            for judge in judges:
                runs.append(judge_run_start(study=study, judge=judge))
        deadline = time.monotonic() + timeout_s
        while use_worker and time.monotonic() < deadline:
            if not JudgeRun.objects.filter(pk__in=[r.pk for r in runs], status__in=JudgeRun.ACTIVE).exists():
                break
            time.sleep(0.2)
    for run in runs:
        run.refresh_from_db()
    return runs


def demo_judge_endpoint() -> str:
    """Where `make run` serves a fake judge (config/launcher.py), so runs started from the demo's
    pages work too; they get the fake server's default answers, in the prompt's format."""
    return f"http://127.0.0.1:{os.environ.get('CONCORD_DEMO_JUDGE_PORT', '8011')}/v1"


DEMO_CAP_USD = 5.0


def demo_judges_and_release(study: Study, preset: str, seed: int) -> None:
    """For `make run`'s demo, built here: two simulated judges in the preset's own method, a G-Eval
    judge where the rubric has scales (calibration), a pairwise judge for RRGen's three responses
    (position bias, Bradley–Terry), a jury of the first two, routing with a comparison to decide,
    and release 1.0.0 in every format. The agent study gets its two judges only, of every criterion,
    whole-trajectory and per step (one asking a call per step, one a structured call per criterion)."""
    from annotation.datasets import FORMATS
    from annotation.datasets.releases import releases_create
    from annotation.demo import JUDGE_KNOBS
    from judges.models import JudgeConfig
    from judges.services.juries import jury_create
    from judges.services.routing import routing_configure, routing_refresh, study_systems

    from annotation.simulation.items import PRESETS

    agent = preset == AGENT_PRESET
    scales = any(c["kind"] in ("likert", "numeric") for c in study.rubric["criteria"])
    methods = [METHODS[preset]] * 2 if preset in METHODS else []
    # G-Eval reads one score token's distribution, which is not asked of trajectories
    methods += (["geval"] if scales and preset not in ("aqua-003", AGENT_PRESET) else []) + (
        ["pairwise"] if preset == "rrgen-001" else [])
    # The agent study's two judges ask its per-step questions both ways judges.methods.trajectory can.
    options = [{"steps": "calls"}, {"steps": "structured"}] if agent else []
    # Each run is estimated before it starts and capped (far above what the demo's simulated prices cost):
    # the runs' cards show both.
    runs = simulated_judges_run(study=study, preset=preset, n_judges=len(methods), methods=methods,
                                knobs=JUDGE_KNOBS, seed=seed, worker="no", max_cost_usd=DEMO_CAP_USD,
                                method_options=options)
    # The simulation's server is gone now; point the judges at the one `make run` keeps.
    JudgeConfig.objects.filter(pk__in=[r.judge_id for r in runs]).update(endpoint=demo_judge_endpoint())
    if agent:  # its judges only: a jury combines whole-output slots only, and no release keeps load_demo quick
        return
    done = [r for r in runs[:2] if r.status in JudgeRun.FINISHED]
    if len(done) == 2 and methods[0] not in ("ranking", "best_worst"):  # juries combine scores and pair verdicts
        jury_create(study=study, runs=done, combine="mean", quorum=2, name=f"{preset}-jury")
    systems = study_systems(study)
    if len(systems) >= 2 and preset in PRESETS:  # routing decides on absolute scores, which the seeds have
        # The demo keeps its studies open for the demo annotators: routing says when it would stop.
        routing_configure(study=study, enabled=True, human_budget=None, comparisons=[systems[:2]], auto_pause=False)
        routing_refresh(study=study)
    with eager_celery():
        releases_create(study=study, version="1.0.0", formats=list(FORMATS), license="cc-by-4.0",
                        changelog="First release of the simulated demo ratings.")


DEMO_PROVIDER_JUDGES = (
    {"name": "hosted-gpt-5-mini", "provider": "openai", "model": "gpt-5-mini", "method": "per_criterion",
     "sampling": {"max_tokens": 300, "reasoning_effort": "minimal"}, "price_in_per_m": 0.25, "price_out_per_m": 2.0,
     "description": "Hosted reasoning model (set OPENAI_API_KEY to run it); `judge_request` shows what it sends."},
    {"name": "hosted-claude-sonnet", "provider": "anthropic", "model": "claude-sonnet-4-5", "method": "all_in_one",
     "sampling": {"max_tokens": 600, "temperature": 0}, "structured_output": True, "price_in_per_m": 3.0,
     "price_out_per_m": 15.0,
     "description": "Anthropic Messages API with the rubric's JSON schema as a forced tool (set ANTHROPIC_API_KEY)."},
)


def demo_provider_judges() -> list[str]:
    """Hosted judges for the demo's judges page: configured and validated against their provider's
    rules, not run (the demo has no keys)."""
    return [judge_config_save(data=dict(d))[0].name for d in DEMO_PROVIDER_JUDGES]
