"""Trajectories in items (docs/item-format.md "The trajectory kind"), on the client side.

    steps(trajectory) -> [{"step", "kind", "role", "tool", "tool_call_id", "span_id"}]   # the server's step keys
    with_steps(ratings) -> ratings with `criterion_key` and `step` (per-step ratings are `<key>@<step>`)
    trajectory_row(id, context, {system: trajectory}) -> an item row for Client.upload_items

Step keys are positional: `m<index>` for a message, `m<index>.t<k>` for its k-th tool call.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import pandas as pd

STEP_SEPARATOR = "@"


def parse(content: str | Mapping[str, Any] | list) -> dict[str, Any]:
    """A trajectory as a dict ({"messages": [...]}, from stored JSON text or a bare list of messages)."""
    data = json.loads(content) if isinstance(content, str) else content
    return {"messages": list(data)} if isinstance(data, list) else dict(data)


def steps(trajectory: str | Mapping[str, Any] | list) -> list[dict[str, Any]]:
    """The rateable steps in order, keyed as the server keys them."""
    out = []
    for n, m in enumerate(parse(trajectory)["messages"]):
        meta = m.get("meta") or {}
        kind = {"tool": "tool_result", "developer": "system"}.get(m["role"], m["role"])
        out.append({"step": f"m{n}", "kind": kind, "role": m["role"], "tool": "",
                    "tool_call_id": m.get("tool_call_id", ""), "span_id": meta.get("span_id", "")})
        for k, call in enumerate(m.get("tool_calls") or ()):
            out.append({"step": f"m{n}.t{k}", "kind": "tool_call", "role": "assistant",
                        "tool": call["function"]["name"], "tool_call_id": call["id"],
                        "span_id": (call.get("meta") or {}).get("span_id") or meta.get("span_id", "")})
    return out


def with_steps(ratings: pd.DataFrame) -> pd.DataFrame:
    """`ratings` (Client.ratings) with `criterion_key` and `step` ("" for a whole-output rating)."""
    parts = ratings["criterion"].fillna("").str.partition(STEP_SEPARATOR)
    return ratings.assign(criterion_key=parts[0], step=parts[2])


def trajectory_row(item_id: str, context: str, trajectories: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    """An item row whose outputs are trajectories, one per system (upload with Client.upload_items)."""
    return {"id": item_id, "context": context, **fields,
            "outputs": [{"system": system, "kind": "trajectory", "content": t} for system, t in trajectories.items()]}
