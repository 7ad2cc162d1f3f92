"""Judge prompts for trajectory outputs (annotation.trajectory: chat-completions messages with tool calls).

The judge receives the trajectory as the conversation it was, not as JSON text: after a first user
message with what every prompt of the criterion shares (role, rubric, criterion, answer format) and
the item's context, the agent's messages follow in chat-completions form (assistant `tool_calls`,
`tool` messages answering them), then a last user message names what to judge: the whole
trajectory, one step, or (structured) every step of the criterion's kinds in one JSON object. Each
provider sends these messages in its own format: OpenAI-compatible servers as they are, Anthropic
as tool_use / tool_result blocks (judges.providers.anthropic).

The agent's own system prompt becomes quoted text in the first user message (the judge's role is
not the agent's); reasoning summaries and tool errors are written into the message text; the
steps' meta (model, tokens, latency) stays out, so a judge is blinded like a rater.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from annotation import trajectory as T
from judges.prompts.base import LABEL_KINDS, Prompt, bounds, choice_values, render, template
from judges.prompts.generic import JSON_LABEL, JSON_SCORE, ROLE, criterion_text, rubric_header

# The truncation rule, stated in every run's files (judges.services.files): what a judge may not see.
TEXT_CHARS = 8000  # a message's text (user, assistant, system)
RESULT_CHARS = 4000  # a tool result
ARGUMENTS_CHARS = 2000  # a tool call's JSON arguments
HEAD_SHARE = 0.75  # a cut text keeps its first three quarters of the limit and its last quarter
TRUNCATION_RULE = (
    f"Trajectories are sent to the judge as chat messages with tool calls. A message's text over {TEXT_CHARS} "
    f"characters, a tool result over {RESULT_CHARS} characters, keeps its first {int(HEAD_SHARE * 100)}% and "
    f"last {100 - int(HEAD_SHARE * 100)}% of that limit with the note `[... N characters cut ...]` between; "
    f"tool-call arguments over {ARGUMENTS_CHARS} characters are replaced by the JSON object "
    f'{{"truncated_arguments": "<their first {ARGUMENTS_CHARS} characters>", "cut_characters": N}}. '
    f"Steps are never dropped. Model names, tokens and latencies of the steps are not sent; reasoning summaries "
    f"and tool errors are, written into the message text."
)
STEP_MARKER = "The step to judge"
WHOLE = "Judge the whole trajectory above: every message, tool call and tool result."
STRUCTURED_ANSWER = "Answer with one JSON object and nothing else: "


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = int(limit * HEAD_SHARE)
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


def _arguments(arguments: str) -> str:
    if len(arguments) <= ARGUMENTS_CHARS:
        return arguments
    return json.dumps({"truncated_arguments": arguments[:ARGUMENTS_CHARS],
                       "cut_characters": len(arguments) - ARGUMENTS_CHARS}, ensure_ascii=False)


def agent_messages(traj: Mapping[str, Any]) -> tuple[list[dict], str]:
    """(the agent's messages in chat-completions form, its system prompt as text).

    Every tool call is answered by a tool message right after its assistant message (chat APIs
    refuse anything else): a call the trajectory never answered gets "(no result recorded)", and a
    result recorded later than the next message is sent there as the note it is."""
    system: list[str] = []
    out: list[dict] = []
    open_calls: list[str] = []

    def close_calls() -> None:
        out.extend({"role": "tool", "tool_call_id": cid, "content": "(no result recorded)"} for cid in open_calls)
        open_calls.clear()

    for m in traj["messages"]:
        role = m["role"]
        if role in ("system", "developer"):
            system.append(clip(m.get("content") or "", TEXT_CHARS))
            continue
        if role == "tool":
            cid = m["tool_call_id"]
            if cid in open_calls:
                open_calls.remove(cid)
                out.append({"role": "tool", "tool_call_id": cid, "content": _tool_text(m)})
            else:  # answered after another message: the chat shape cannot hold it there
                close_calls()
                out.append({"role": "user", "content": f"[tool result for call {cid}, recorded late]\n"
                                                       + _tool_text(m)})
            continue
        close_calls()
        text = m.get("content") or ""
        if role == "assistant":
            if m.get("reasoning"):
                text = f"[reasoning summary] {m['reasoning']}\n\n{text}".rstrip()
            if m.get("refusal"):
                text = f"{text}\n[refusal] {m['refusal']}".strip()
            msg: dict[str, Any] = {"role": "assistant", "content": clip(text, TEXT_CHARS) or None}
            if m.get("tool_calls"):
                msg["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["function"]["name"],
                                                   "arguments": _arguments(c["function"]["arguments"])}}
                                     for c in m["tool_calls"]]
                open_calls.extend(c["id"] for c in m["tool_calls"])
            out.append(msg)
            continue
        out.append({"role": "user", "content": clip(text, TEXT_CHARS)})
    close_calls()
    return out, "\n\n".join(s for s in system if s)


def _tool_text(m: Mapping[str, Any]) -> str:
    text = clip(m.get("content") or "", RESULT_CHARS)
    error = (m.get("meta") or {}).get("error")
    return f"[tool error] {error}\n{text}".rstrip() if error else text


def describe_step(step: T.Step, number: int) -> str:
    """Where a step is in the conversation, in words the judge can find it by."""
    if step.kind == "tool_call":
        call = step.call or {}
        return (f"step {step.key} (number {number}): the call of tool `{call['function']['name']}` "
                f"(call id {call['id']}) with arguments {clip(call['function']['arguments'], 300)}")
    text = (step.message.get("content") or "").strip().replace("\n", " ")
    where = {"tool_result": f"the result of tool call {step.message.get('tool_call_id')}",
             "assistant": "the assistant message", "user": "the user message", "system": "the system prompt"}
    return f"step {step.key} (number {number}): {where.get(step.kind, step.kind)} that begins {clip(text, 160)!r}"


def _answer(criterion: Mapping[str, Any], overrides: Mapping[str, str] | None) -> tuple[str, str]:
    if criterion.get("kind") in LABEL_KINDS:
        return render(template(overrides, "answer_label", JSON_LABEL),
                      options="|".join(choice_values(criterion))), "label"
    lo, hi = bounds(criterion)
    return render(template(overrides, "answer_json", JSON_SCORE), lo=lo, hi=hi), "json_score"


def _structured_answer(criterion: Mapping[str, Any], keys: Sequence[str]) -> str:
    if criterion.get("kind") in LABEL_KINDS:
        value = f'"<one of {"|".join(choice_values(criterion))}>"'
    else:
        lo, hi = bounds(criterion)
        value = f"<integer from {lo} to {hi}>"
    fields = [f'"{k}": {value}' for k in keys] + ['"reasoning": "<brief justification per step>"']
    return STRUCTURED_ANSWER + "{" + ", ".join(fields) + "}"


def build(rubric: Mapping[str, Any], criterion: Mapping[str, Any], item: Mapping[str, Any], content: str,
          steps: Sequence[str] | None = None, *, structured: bool = False,
          overrides: Mapping[str, str] | None = None) -> Prompt:
    """The prompt judging `criterion` on a trajectory: the whole of it (`steps` None), one step
    (`steps` = [key]) or, `structured`, every step in `steps` in one JSON answer."""
    traj = T.parse(content)
    messages, agent_system = agent_messages(traj)
    if structured:
        answer, expects = _structured_answer(criterion, steps or ()), "json_fields"
    else:
        answer, expects = _answer(criterion, overrides)
    shared = "\n\n".join([template(overrides, "role", ROLE), rubric_header(rubric), "## Criterion",
                          criterion_text(criterion), answer]).rstrip() + "\n\n"
    intro = "## Input\n" + (item.get("context") or "").strip()
    if agent_system:
        intro += "\n\n## The agent's system prompt\n" + agent_system
    intro += "\n\n## The agent's trajectory follows as the conversation it was."
    if steps is None:
        ask = WHOLE
    else:
        numbered = {s.key: (n, s) for n, s in enumerate(T.steps(traj), start=1)}
        lines = [describe_step(numbered[k][1], numbered[k][0]) for k in steps]
        ask = f"{STEP_MARKER}{'s' if structured else ''} (judge {'each' if structured else 'it'} alone, " \
              f"in the context of the conversation above):\n" + "\n".join(f"- {line}" for line in lines)
    msgs = ({"role": "user", "content": shared + intro + "\n"}, *messages,
            {"role": "user", "content": ask + "\n\n" + answer + "\n"})
    return Prompt(tuple(msgs), shared, expects, criterion["key"])
