"""A judge's plan: one typed object built once from a judge configuration (a run's snapshot dict)
and the rubric, that answers what starting, estimating, previewing and running a judge ask of it.
No Django.

Which criteria it scores per output, which item-level slots an item has (pairwise, ranking,
best_worst), which key a comparative or label judge compares on, which prompts it renders (the
run key's prompt digest), its request limits (rpm, tpm, chunk size, cost cap) and the most output
tokens a request may be billed for. `JudgePlan.build` checks the configuration against the rubric
once (a misspelt override, an unknown criterion, a key of the wrong kind) so later callers ask
the plan instead of reading the dict again.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Sequence

from annotation import trajectory as T
from judges import methods as M
from judges import prompts
from judges.config import COMMON_METHOD_OPTIONS, ENSEMBLE_OPTIONS, ITEM_LEVEL_METHODS, LABEL_METHODS
from judges.config import chunk_size as config_chunk_size
from judges.methods.best_worst import DEFAULT_TUPLE_SIZE, bw_slot, design
from judges.methods.ranking import rank_slot
from judges.prompts import aqua_003, check_rubric_overrides
from judges.prompts.base import LABEL_KINDS, judgeable
from judges.providers import output_limit
from rubrics.schema import step_kinds

SLOT_MAX = 80  # JudgeScore.criterion's length
STEP_SEPARATOR = "@"  # a per-step slot is `<criterion>@<step>`, as a rater's per-step rating is stored
# The methods that judge a trajectory as chat messages, per step where the rubric asks so (judges.methods.trajectory)
TRAJECTORY_METHODS = ("per_criterion", "all_in_one")
BATCH_DISCOUNT = 0.5  # OpenAI's Batch API and Anthropic's Message Batches both cost half the normal price
# A stand-in item whose text marks where each item's own text goes in the rendered templates.
SENTINEL_ITEM = {"id": "{item.id}", "context": "{item.context}", "context_kind": "text", "metadata": {},
                 "outputs": [{"content": "{output.0}", "kind": "text", "metadata": {}},
                             {"content": "{output.1}", "kind": "text", "metadata": {}}]}


def pair_slot(key: str, a: int, b: int) -> str:
    return f"pair:{key}:{a}-{b}"


@dataclass(frozen=True)
class Limits:
    """How fast and how far a run may go: none of it changes what the model answers."""

    chunk_size: int
    rpm: int | None
    tpm: int | None
    max_cost_usd: float | None

    def time_s(self, calls: int, tokens: int) -> float | None:
        """Seconds `calls` requests of `tokens` in all need at least under the limits; None without limits."""
        if not (self.rpm or self.tpm):
            return None
        return 60.0 * max(calls / self.rpm if self.rpm else 0.0, tokens / self.tpm if self.tpm else 0.0)


@dataclass(frozen=True)
class JudgePlan:
    """What one judge does on one rubric. `config` is the snapshot dict the backends and providers
    still take; the typed fields are read from it once."""

    config: Mapping[str, Any] = field(repr=False)
    rubric: Mapping[str, Any] = field(repr=False)
    name: str
    method: str
    backend: str
    options: Mapping[str, Any]  # method_options
    sampling: Mapping[str, Any]
    overrides: Mapping[str, str]
    wanted: tuple[str, ...]  # the configuration's `criteria` (empty: every judgeable one)
    members: tuple[JudgePlan, ...] = ()  # a weighted ensemble's voters
    stages: tuple[JudgePlan, ...] = ()  # escalation: the cheap judge, then the experts

    # -------------------------------------------------------------------------------- building

    @classmethod
    def of(cls, config: Mapping[str, Any], rubric: Mapping[str, Any]) -> JudgePlan:
        """The plan, unchecked (a running chunk's: its run was checked when it started)."""
        if isinstance(config, JudgePlan):
            return config
        return cls(config=config, rubric=rubric, name=config.get("name", ""), method=config.get("method", ""),
                   backend=config.get("backend", ""), options=dict(config.get("method_options") or {}),
                   sampling=dict(config.get("sampling") or {}), overrides=dict(config.get("prompt_overrides") or {}),
                   wanted=tuple(config.get("criteria") or ()),
                   members=tuple(cls.of(c, rubric) for c in config.get("members") or ()),
                   stages=tuple(cls.of(c, rubric) for c in config.get("stages") or ()))

    @classmethod
    def build(cls, config: Mapping[str, Any], rubric: Mapping[str, Any]) -> JudgePlan:
        """The plan, checked against the rubric: ValueError (or KeyError) naming what does not fit."""
        plan = cls.of(config, rubric)
        plan.criteria  # noqa: B018 -- computing it checks overrides, criteria and keys
        if plan.per_step and plan.method not in TRAJECTORY_METHODS:
            raise ValueError(f"per-step criteria ({', '.join(plan.per_step)}) are judged by the "
                             f"{' or '.join(TRAJECTORY_METHODS)} method, not {plan.method}; "
                             f"leave them out with `criteria:`")
        return plan

    # -------------------------------------------------------------------------------- what it scores

    @property
    def item_level(self) -> bool:
        return self.method in ITEM_LEVEL_METHODS

    @property
    def is_ensemble(self) -> bool:
        return self.options.get("ensemble") == "weighted"

    @cached_property
    def criteria(self) -> tuple[str, ...]:
        """Criterion keys scored per output (none for the comparative methods: item-level slots)."""
        check_rubric_overrides(self.rubric, self.overrides or None)  # before a run starts, not in its chunks
        if self.method == "pairwise":
            return ()
        if self.item_level:
            self.compare_key  # noqa: B018 -- a wrong key stops the run before it starts
            return ()
        if self.method in LABEL_METHODS:
            return (self.label_key,)
        crits = judgeable(self.rubric)
        if self.method == "geval":
            crits = [c for c in crits if c.get("kind") not in LABEL_KINDS]
        keys = [c["key"] for c in crits]
        if self.wanted:
            unknown = sorted(set(self.wanted) - set(keys))
            if unknown:
                raise ValueError(f"criteria {unknown} are not judgeable by {self.method} in this rubric")
            keys = [k for k in keys if k in self.wanted]
        if not keys:
            raise ValueError(f"nothing in this rubric for method {self.method} to judge")
        return tuple(keys)

    @cached_property
    def label_key(self) -> str:
        if self.options.get("key"):
            return self.options["key"]
        labels = [c["key"] for c in judgeable(self.rubric) if c.get("kind") in LABEL_KINDS]
        for k in self.wanted:
            if k in labels:
                return k
        if not labels:
            raise ValueError(f"method {self.method} needs a choice/binary criterion; rubric has none")
        return labels[0]

    @property
    def pair_key(self) -> str:
        return self.options.get("key") or "overall"

    @cached_property
    def compare_key(self) -> str:
        """What a ranking or best_worst judge compares on: `method_options.key` (a criterion of the
        method's own kind), else the rubric's first criterion of that kind, else "overall"."""
        key = self.options.get("key")
        crits = {c["key"]: c for c in self.rubric.get("criteria", [])}
        if key:
            if key not in crits:
                raise ValueError(f"method_options.key: the rubric has no criterion {key!r}")
            if crits[key]["kind"] != self.method:
                raise ValueError(f"method_options.key: {key!r} is a {crits[key]['kind']} question; "
                                 f"a {self.method} judge compares on a {self.method} criterion")
            return key
        return next((c["key"] for c in crits.values() if c["kind"] == self.method), "overall")

    def tuple_size(self, key: str) -> int:
        if self.options.get("tuple_size"):
            return int(self.options["tuple_size"])
        crit = next((c for c in self.rubric.get("criteria", []) if c["key"] == key), None)
        return int((crit or {}).get("tuple_size") or DEFAULT_TUPLE_SIZE)

    def item_slots(self, n_outputs: int, item_key: str = "") -> list[str]:
        """Item-level slot names of an item with n outputs; best_worst's tuples depend on `item_key`
        (the item's external id), never their number."""
        if self.method == "pairwise":
            return [pair_slot(self.pair_key, a, b) for a, b in itertools.combinations(range(n_outputs), 2)]
        if not self.item_level or n_outputs < 2:
            return []
        key = self.compare_key
        if self.method == "ranking":
            return [rank_slot(key)]
        slots = [bw_slot(key, shown) for shown in design(item_key, n_outputs, self.tuple_size(key), key)]
        if any(len(s) > SLOT_MAX for s in slots):
            raise ValueError(f"best-worst slot names for {n_outputs} outputs exceed {SLOT_MAX} characters: "
                             f"use a shorter criterion key")
        return slots

    @cached_property
    def per_step(self) -> dict[str, tuple[str, ...]]:
        """The per-step criteria it scores (rubric `scope`): key -> the step kinds they rate."""
        crits = {c["key"]: c for c in self.rubric.get("criteria", [])}
        kinds = {k: step_kinds(crits[k]) for k in self.criteria if k in crits}
        return {k: v for k, v in kinds.items() if v is not None}

    @property
    def step_mode(self) -> str:
        """calls: one call per step; structured: one call per criterion answering every step."""
        return self.options.get("steps") or "calls"

    def output_slots(self, content: str, kind: str) -> list[str]:
        """The slots of one output: its criteria, a per-step one once per matching step of a
        trajectory (`<key>@<step>`) and not at all for other outputs, as raters are asked."""
        if not self.per_step:
            return list(self.criteria)
        steps: list[T.Step] = []
        if kind == "trajectory":
            try:
                steps = T.steps(T.parse(content))
            except T.TrajectoryError:
                steps = []
        out: list[str] = []
        for key in self.criteria:
            kinds = self.per_step.get(key)
            out += [key] if kinds is None else [f"{key}{STEP_SEPARATOR}{s.key}" for s in steps if s.kind in kinds]
        return out

    def pending(self, item_key: str, outputs: Sequence[tuple[str, str]]) -> dict[tuple[str, int | None], list[str]]:
        """Every slot of one item still to score, from its outputs' (content, kind): each output's
        slots (per step on a trajectory, as output_slots says) and the item-level slots."""
        out: dict[tuple[str, int | None], list[str]] = {}
        if self.criteria:
            out.update({(item_key, i): self.output_slots(content, kind) for i, (content, kind) in enumerate(outputs)})
        slots = self.item_slots(len(outputs), item_key)
        if slots:
            out[(item_key, None)] = slots
        return out

    def slots_per_item(self, n_outputs: int) -> int:
        return n_outputs * len(self.criteria) + len(self.item_slots(n_outputs))

    # -------------------------------------------------------------------------------- how it asks

    @property
    def pricing(self) -> M.Pricing:
        """USD per 1M tokens; a batch judge's are its batch prices (method_options.batch_discount)."""
        share = float(self.options.get("batch_discount") or BATCH_DISCOUNT) if self.options.get("batch") else 1.0
        return M.Pricing(share * float(self.config.get("price_in_per_m") or 0.0),
                         share * float(self.config.get("price_out_per_m") or 0.0))

    def settings(self, cache: Any, criteria: Sequence[str] | None) -> M.MethodSettings:
        s, mo = self.sampling, self.options
        return M.MethodSettings(
            temperature=float(s.get("temperature", 0.0)), top_p=float(s.get("top_p", 1.0)),
            max_tokens=int(s.get("max_tokens", 512)), seed=s.get("seed"), pricing=self.pricing,
            overrides=self.overrides or None, output_format=mo.get("output_format"),
            use_json_schema=bool(mo.get("use_json_schema", False)),
            structured=bool(self.config.get("structured_output")),
            cache=cache if mo.get("use_cache", True) else None, criteria=list(criteria) if criteria else None,
        )

    @property
    def method_kwargs(self) -> dict[str, Any]:
        return {k: v for k, v in self.options.items()
                if k not in COMMON_METHOD_OPTIONS and k not in ENSEMBLE_OPTIONS and k != "experts"}

    @property
    def ensemble_weights(self) -> list[float]:
        """Frozen learnt weights (weights: gold), else the given ones, else 1 each."""
        if self.config.get("ensemble_weights"):
            return [float(w) for w in self.config["ensemble_weights"]]
        given = self.options.get("weights")
        return [float(w) for w in given] if isinstance(given, list) else [1.0] * len(self.members)

    @property
    def limits(self) -> Limits:
        cap = self.options.get("max_cost_usd")
        return Limits(chunk_size=config_chunk_size(self.config), rpm=self.options.get("rpm") or None,
                      tpm=self.options.get("tpm") or None, max_cost_usd=None if cap is None else float(cap))

    def output_limit(self, request: Any) -> int:
        """The most output tokens this judge may be billed for `request` (as its provider puts the cap)."""
        return output_limit(self.config, request)

    # -------------------------------------------------------------------------------- its prompts

    def templates(self, criteria: Sequence[str] | None = None) -> list:
        """Its prompts rendered for a stand-in item (the run key's prompt digest)."""
        criteria = self.criteria if criteria is None else criteria
        fmt = self.options.get("output_format")
        rendered: list[Any] = []
        if self.method == "pairwise":
            rendered.append(prompts.build_pairwise(self.rubric, SENTINEL_ITEM, 0, 1, self.options.get("key"),
                                                   self.overrides).messages)
        if self.method in ("ranking", "best_worst"):
            key = self.compare_key
            build = prompts.build_ranking if self.method == "ranking" else prompts.build_best_worst
            rendered.append(build(self.rubric, SENTINEL_ITEM, [0, 1], None if key == "overall" else key,
                                  self.overrides).messages)
        for key in criteria:
            rendered.append(prompts.build_criterion(self.rubric, key, SENTINEL_ITEM, 0, self.overrides,
                                                    fmt).messages)
        if self.method in ("modular", "escalation"):
            for kind in sorted(aqua_003.SUBJUDGE_HEADERS):
                rendered.append(prompts.build_subjudge(kind, SENTINEL_ITEM, 0, self.overrides).messages)
        return [[dataclasses.asdict(m) if dataclasses.is_dataclass(m) else m for m in msgs] for msgs in rendered]
