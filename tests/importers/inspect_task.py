"""A tiny Inspect AI eval on its mockllm model (no network): an agent with one tool, one sample whose
tool call succeeds and one whose tool fails. Run by the tests to get logs written by inspect-ai itself."""

from __future__ import annotations

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, system_message, use_tools
from inspect_ai.tool import ToolError, tool


@tool
def search_trains():
    async def execute(to: str):
        """Search trains.

        Args:
            to: the destination city
        """
        if to == "Nowhere":
            raise ToolError("timetable service unavailable")
        return f"09:04 TGV to {to}"

    return execute


def _model_turn(input, tools, tool_choice, config) -> ModelOutput:
    # mockllm counts tokens with tiktoken (a download) unless the output states its usage.
    last = input[-1]
    if last.role == "tool":
        output = ModelOutput.from_content("mockllm/model", f"Answer: {last.text or 'no train found'}")
    else:
        city = "Nowhere" if "Nowhere" in last.text else "Lyon"
        output = ModelOutput.for_tool_call("mockllm/model", "search_trains", {"to": city},
                                           tool_call_id=f"call_{city.lower()}")
    output.usage = ModelUsage(input_tokens=30, output_tokens=7, total_tokens=37)
    return output


def write_logs(log_dir: str) -> list[str]:
    """Run the eval once and write its log as .eval and as .json; returns the two paths."""
    task = Task(dataset=[Sample(input="A train to Lyon?", target="TGV", id="lyon"),
                         Sample(input="A train to Nowhere?", target="TGV", id="nowhere")],
                solver=[system_message("You book trains."), use_tools(search_trains()), generate()],
                scorer=includes())
    [log] = eval(task, model=get_model("mockllm/model", custom_outputs=_model_turn), log_dir=log_dir,
                 log_format="eval", display="none", max_samples=1)
    from inspect_ai.log import read_eval_log, write_eval_log

    json_path = log.location.removesuffix(".eval") + ".json"
    write_eval_log(read_eval_log(log.location), json_path, format="json")
    return [log.location, json_path]
