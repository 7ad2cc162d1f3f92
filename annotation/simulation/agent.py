"""A simulated agent study: a tool-using assistant's trajectories (some with failed tool calls) rated
per trajectory and per step (issue 56; docs/item-format.md "The trajectory kind").

    agent_item(seed, i) -> an item row with one trajectory per system
    agent_study.agent_study_create(slug=..., admin=..., n_items=..., n_raters=..., seed=..., knobs=...) -> SimulatedStudy

The planted truth of each per-step question (was this tool call needed, did this turn help) is kept
in the output's metadata (`truth`, keyed as ratings are, e.g. "call_needed@m2.t0"), so simulated
raters answer from it with their own noise and a report can be checked against it.
"""

from __future__ import annotations

import hashlib
import json

from annotation.simulation.latent import normal, output_quality, unit

PRESET = "agent"  # the simulation's name for it; the rubric is AGENT_RUBRIC (no rubric preset file)
SYSTEMS = {"agent-gpt-4o": 0.6, "agent-llama-3.1-70b": -0.4}

AGENT_RUBRIC = {
    "slug": "agent-trajectories", "name": "Agent trajectories",
    "description": "A tool-using assistant answers a request. Rate the whole run, each tool call and each "
                   "assistant turn.",
    "criteria": [
        {"key": "task_success", "name": "Did the assistant complete the request?", "kind": "likert", "min": 1,
         "max": 5, "levels": [{"value": 1, "label": "Not at all"}, {"value": 5, "label": "Fully"}]},
        {"key": "answer_supported", "name": "Was the final answer supported by the tool results?",
         "kind": "binary", "choices": [{"value": "yes"}, {"value": "no"}]},
        {"key": "call_needed", "name": "Was this tool call needed?", "kind": "binary", "scope": "steps",
         "steps": ["tool_call"], "choices": [{"value": "yes"}, {"value": "no"}]},
        {"key": "turn_helpful", "name": "Did this turn move the task forward?", "kind": "binary",
         "scope": "assistant_turns", "choices": [{"value": "yes"}, {"value": "no"}]},
        {"key": "unsupported", "name": "Highlight any claim the tool results do not support", "kind": "spans",
         "scope": "assistant_turns", "labels": ["unsupported claim"], "required": False},
    ],
    "item_options": {"comment": True},
}

# (request, tool, arguments, result, answer from the result, needless extra call)
_TASKS = [
    ("What will the weather be in Lyon tomorrow?", "get_forecast", {"city": "Lyon", "day": "tomorrow"},
     {"city": "Lyon", "high_c": 17, "low_c": 9, "sky": "light rain"},
     "Tomorrow in Lyon: light rain, 9 to 17 °C. Take an umbrella.",
     ("get_time", {"timezone": "Europe/Paris"})),
    ("Find me a train from Paris to Lyon on Friday morning.", "search_trains",
     {"from": "Paris Gare de Lyon", "to": "Lyon Part-Dieu", "date": "2026-12-11", "after": "07:00"},
     {"trains": [{"departs": "07:04", "arrives": "09:01", "price_eur": 54}, {"departs": "08:00", "arrives": "09:56",
                                                                              "price_eur": 71}]},
     "The 07:04 TGV arrives at 09:01 for €54; the 08:00 arrives at 09:56 for €71.",
     ("get_weather", {"city": "Paris"})),
    ("How many open invoices does customer ACME have?", "query_invoices", {"customer": "ACME", "status": "open"},
     {"count": 3, "total_eur": 12480.5},
     "ACME has 3 open invoices, €12,480.50 in all.",
     ("list_customers", {"limit": 100})),
    ("Convert 250 US dollars to euros.", "convert_currency", {"amount": 250, "from": "USD", "to": "EUR"},
     {"amount": 231.12, "currency": "EUR", "rate": 0.92448},
     "250 USD is about 231.12 EUR at today's rate (0.9245).",
     ("get_time", {"timezone": "UTC"})),
    ("Summarise the open bugs labelled 'crash' in our tracker.", "search_issues", {"label": "crash", "state": "open"},
     {"issues": [{"id": 812, "title": "Crash on empty upload"}, {"id": 845, "title": "Worker crash on SIGTERM"}]},
     "Two open crash bugs: #812 (crash on an empty upload) and #845 (the worker crashes on SIGTERM).",
     ("get_repo", {"name": "concord"})),
]
_SYSTEM_PROMPT = "You are a helpful assistant with tools. Call a tool when you need facts; answer from its results."


def _tier(z: float) -> int:
    return 0 if z > 0.4 else (1 if z > -0.4 else 2)


def hex_id(*names: object) -> str:
    """Stable hex ids (span and trace ids as OpenTelemetry writes them); hash() differs per process."""
    return hashlib.sha256(repr(names).encode()).hexdigest()


def _call(call_id: str, name: str, args: dict, latency: int, span: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)},
            "meta": {"span_id": span, "latency_ms": latency}}


def _trajectory(seed: int, item_id: str, i: int, position: int, system: str, effect: float) -> tuple[dict, dict]:
    """(trajectory, truth) for one system's run: good runs call the one tool needed and answer from
    it; fair ones also make a needless call; poor ones meet a failed call and answer anyway."""
    request, tool, args, result, answer, (extra_tool, extra_args) = _TASKS[i % len(_TASKS)]
    t = _tier(output_quality(seed, effect, item_id, position))
    failed = t == 2 or unit(seed, "tool-failure", item_id, position) < 0.15
    span = hex_id(seed, item_id, position)[:12]
    meta = {"model": system.removeprefix("agent-"), "input_tokens": 600 + 40 * i, "output_tokens": 35,
            "latency_ms": 700 + int(300 * unit(seed, "lat", item_id, position)), "span_id": span + "0001"}
    messages: list[dict] = [{"role": "system", "content": _SYSTEM_PROMPT}, {"role": "user", "content": request}]
    truth: dict[str, str] = {}
    # Ids as providers make them: opaque (an id naming the output's position would tell raters the system).
    calls = [_call("call_" + hex_id(seed, item_id, position, 1)[:24], tool, args, 180, span + "0002")]
    if t == 1:
        calls.append(_call("call_" + hex_id(seed, item_id, position, 2)[:24], extra_tool, extra_args, 90, span + "0003"))
    messages.append({"role": "assistant", "content": None, "reasoning": f"I need {tool} to answer this.",
                     "tool_calls": calls, "meta": meta})
    truth["turn_helpful@m2"] = "yes"
    truth["call_needed@m2.t0"] = "yes"
    if t == 1:
        truth["call_needed@m2.t1"] = "no"
    body = json.dumps({"error": "upstream timeout"} if failed else result, indent=None)
    tool_meta: dict = {"latency_ms": 30_000 if failed else 180, "span_id": span + "0002"}
    if failed:
        tool_meta["error"] = "Timed out after 30 s (HTTP 504)"
    messages.append({"role": "tool", "tool_call_id": calls[0]["id"], "content": body, "meta": tool_meta})
    if t == 1:
        messages.append({"role": "tool", "tool_call_id": calls[1]["id"], "content": json.dumps({"ok": True}),
                         "meta": {"latency_ms": 90, "span_id": span + "0003"}})
    last = len(messages)
    if failed and t == 2:  # answers as if the call had worked: unsupported
        final = answer
        supported = "no"
    elif failed:
        final = f"I could not reach {tool} (it timed out), so I cannot answer reliably yet. Shall I try again?"
        supported = "yes"
    else:
        final = answer
        supported = "yes"
    messages.append({"role": "assistant", "content": final, "meta": {**meta, "span_id": span + "0004"}})
    truth[f"turn_helpful@m{last}"] = "no" if supported == "no" else "yes"
    if supported == "no":  # a highlight planted on the unsupported answer (its first sentence)
        truth[f"unsupported@m{last}"] = "yes"
    truth["answer_supported"] = supported
    # A long tool log now and then, so raters meet a folded result.
    if unit(seed, "long", item_id, position) < 0.25 and not failed:
        messages[3]["content"] = json.dumps({**result, "log": [f"fetched page {k}" for k in range(60)]})
    return {"messages": messages, "trace_id": hex_id(seed, item_id)[:32],
            "meta": {"agent": system}}, truth


def agent_item(seed: int, i: int) -> dict:
    item_id = f"agent-{i + 1:03d}"
    outputs = []
    for position, (system, effect) in enumerate(SYSTEMS.items()):
        content, truth = _trajectory(seed, item_id, i, position, system, effect)
        outputs.append({"system": system, "kind": "trajectory", "content": content, "metadata": {"truth": truth}})
    return {"id": item_id, "context": _TASKS[i % len(_TASKS)][0], "outputs": outputs,
            "metadata": {"task": "tool use"}}


def step_truth_z(truth: dict, key: str, *, seed: int, item_id: str, position: int) -> float | None:
    """The latent quality of a per-step answer from the planted truth (None where none is planted)."""
    if key not in truth:
        return None
    return (1.0 if truth[key] == "yes" else -1.0) + 0.3 * normal(seed, "step", item_id, position, key)
