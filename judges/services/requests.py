"""The HTTP requests a judge would send for a stand-in item, built and recorded, never sent. No Django.

`planned_requests` runs the judge's method on one stand-in item against a backend that records
each request and answers "not sent", then has each judge's provider build the exact HTTP request.
Escalation and ensembles list the requests of every judge the first pass reaches.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from judges.backends.base import Backend, JudgeRequest, Result
from judges.backends.errors import PermanentBackendError
from judges.config import ITEM_LEVEL_METHODS
from judges.providers import HttpRequest, build_request
from judges.plan import JudgePlan
from judges.services.engine import judge_items


@dataclass(frozen=True)
class PlannedRequest:
    judge: str
    provider: str
    request: HttpRequest

    def as_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "provider": self.provider, **self.request.as_dict()}


class RecordingBackend(Backend):
    """Records every request; each answer is an error, so the method finishes without a model."""

    name = "recording"

    def __init__(self, config: Mapping[str, Any], log: list[tuple[Mapping[str, Any], JudgeRequest]]):
        self.config, self.log = config, log

    async def score_many(self, requests: Sequence[JudgeRequest]) -> list[Result]:
        self.log.extend((self.config, r) for r in requests)
        return [PermanentBackendError("not sent (judge_request)")] * len(requests)


def stand_in_item(n_outputs: int) -> dict[str, Any]:
    return {"id": "stand-in", "context": "<the item's context>", "metadata": {},
            "outputs": [{"content": f"<output {i + 1}>"} for i in range(n_outputs)]}


def planned_requests(config: Mapping[str, Any], rubric: Mapping[str, Any], *, n_outputs: int | None = None,
                     mask_key: bool = True) -> list[PlannedRequest]:
    """Every HTTP request `config` sends for a stand-in item (1 output, or 3 for the methods that
    compare an item's outputs); keys masked unless `mask_key` is False."""
    if config.get("backend") != "openai":
        raise ValueError(f"judge {config.get('name')} runs a local model (backend {config.get('backend')}): "
                         f"it sends no HTTP request")
    n = n_outputs or (3 if config["method"] in ITEM_LEVEL_METHODS else 1)
    item = stand_in_item(n)
    plan = JudgePlan.build(config, rubric)
    log: list[tuple[Mapping[str, Any], JudgeRequest]] = []
    asyncio.run(judge_items(plan, rubric, [item], plan.pending("stand-in", n),
                            backend_for=lambda c: RecordingBackend(c, log)))
    return [PlannedRequest(c.get("name", ""), c.get("provider", ""), build_request(c, r, mask_key=mask_key))
            for c, r in log]
