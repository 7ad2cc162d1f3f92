"""The HTTP requests a judge would send for a stand-in item, built and recorded, never sent. No Django.

`planned_requests` runs the judge's method on one stand-in item against a backend that records
each request and answers "not sent", then has each judge's provider build the exact HTTP request.
Escalation and ensembles list the requests of every judge the first pass reaches.

A rubric that asks per step (scope `assistant_turns | steps`) gets a stand-in trajectory, so the
preview shows what the judge is sent for one: the agent's messages in the provider's own format,
a call per step or one structured call per criterion, as configured. Any item may be given instead
(`item`, e.g. a row of an items file). Requests for a trajectory carry the truncation rule that
decides what a long trajectory loses (judges.prompts.trajectory.TRUNCATION_RULE).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from judges.backends.base import Backend, JudgeRequest, Result
from judges.backends.errors import PermanentBackendError
from judges.config import ITEM_LEVEL_METHODS
from judges.providers import HttpRequest, build_request
from annotation import trajectory as T
from judges.plan import JudgePlan
from judges.prompts.trajectory import TRUNCATION_RULE
from judges.services.engine import judge_items
from rubrics.schema import step_kinds

# A short agent run: a request, a tool call and its result, the final answer (every step kind but system).
STAND_IN_TRAJECTORY = {"messages": [
    {"role": "user", "content": "<the user's request>"},
    {"role": "assistant", "content": None, "reasoning": "<the agent's reasoning summary>",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "lookup", "arguments": "{\"query\": \"<the tool call's arguments>\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "<the tool's result>"},
    {"role": "assistant", "content": "<the final answer>"}]}


@dataclass(frozen=True)
class PlannedRequest:
    judge: str
    provider: str
    request: HttpRequest
    truncation_rule: str = ""  # for a trajectory: what a long one loses before it is sent

    def as_dict(self) -> dict[str, Any]:
        extra = {"truncation_rule": self.truncation_rule} if self.truncation_rule else {}
        return {"judge": self.judge, "provider": self.provider, **self.request.as_dict(), **extra}


class RecordingBackend(Backend):
    """Records every request; each answer is an error, so the method finishes without a model."""

    name = "recording"

    def __init__(self, config: Mapping[str, Any], log: list[tuple[Mapping[str, Any], JudgeRequest]]):
        self.config, self.log = config, log

    async def score_many(self, requests: Sequence[JudgeRequest]) -> list[Result]:
        self.log.extend((self.config, r) for r in requests)
        return [PermanentBackendError("not sent (judge_request)")] * len(requests)


def stand_in_item(n_outputs: int, *, trajectory: bool = False) -> dict[str, Any]:
    if trajectory:
        outputs = [{"content": T.normalise(STAND_IN_TRAJECTORY), "kind": "trajectory", "metadata": {}}
                   for _ in range(n_outputs)]
    else:
        outputs = [{"content": f"<output {i + 1}>", "kind": "text", "metadata": {}} for i in range(n_outputs)]
    return {"id": "stand-in", "context": "<the item's context>", "metadata": {}, "outputs": outputs}


def planned_requests(config: Mapping[str, Any], rubric: Mapping[str, Any], *, n_outputs: int | None = None,
                     mask_key: bool = True, item: Mapping[str, Any] | None = None,
                     trajectory: bool | None = None) -> list[PlannedRequest]:
    """Every HTTP request `config` sends for `item`, or a stand-in item (1 output, or 3 for the
    methods that compare an item's outputs; a trajectory where the rubric asks per step, or
    `trajectory` says so); keys masked unless `mask_key` is False."""
    if config.get("backend") != "openai":
        raise ValueError(f"judge {config.get('name')} runs a local model (backend {config.get('backend')}): "
                         f"it sends no HTTP request")
    plan = JudgePlan.build(config, rubric)
    if item is None:
        n = n_outputs or (3 if config["method"] in ITEM_LEVEL_METHODS else 1)
        asks_per_step = any(step_kinds(c) is not None for c in rubric.get("criteria", []))
        item = stand_in_item(n, trajectory=asks_per_step if trajectory is None else trajectory)
    item = {**item, "id": "stand-in"}
    log: list[tuple[Mapping[str, Any], JudgeRequest]] = []
    outputs = [(o["content"], o.get("kind", "text")) for o in item["outputs"]]
    asyncio.run(judge_items(plan, rubric, [item], plan.pending("stand-in", outputs),
                            backend_for=lambda c: RecordingBackend(c, log)))
    rule = TRUNCATION_RULE if any(o.get("kind") == "trajectory" for o in item["outputs"]) else ""
    return [PlannedRequest(c.get("name", ""), c.get("provider", ""), build_request(c, r, mask_key=mask_key), rule)
            for c, r in log]
