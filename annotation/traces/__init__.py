"""Trajectories taken from where they live: OpenTelemetry GenAI spans (OTLP/HTTP), Inspect AI eval
logs, Langfuse and Phoenix trace exports, OpenAI chat-completions and Responses JSONL.

Every source maps to the trajectory item shape of annotation.trajectory (OpenAI messages with a
`meta` per step) in one place, `mapping.py`; the readers of each source only find the spans,
generations or records in their files. Items come out as rows of the JSONL item format
(docs/item-format.md) and go through the ordinary, all-or-nothing import.
"""
