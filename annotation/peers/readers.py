"""The peers' own files -> plain records, with every problem named by where it is. Pure: no Django.

Label Studio: the JSON export (a list of tasks, each with `data` and `annotations`, an annotation's
`result` a list of regions {from_name, type, value}). Potato: its project folder (config.yaml naming
the data files and output_annotation_dir) whose <output>/<user>/user_state.json holds each user's
labels as instance_id_to_label_to_value: {instance: [[{"schema", "name"}, value], ...]}.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from annotation.peers.mapping import Mapping
from rubrics.yaml_bounded import yaml_load

MAX_ERRORS = 50
SOURCES = ("label-studio", "potato")


class PeerFileError(ValueError):
    """The file was refused whole; `errors` lists (where, field, message)."""

    def __init__(self, errors: list[tuple[str, str, str]]):
        self.errors = errors[:MAX_ERRORS]
        lines = [f"{where}: {fld}: {msg}" if fld else f"{where}: {msg}" for where, fld, msg in self.errors]
        if len(errors) > MAX_ERRORS:
            lines.append(f"(and {len(errors) - MAX_ERRORS} more)")
        super().__init__("\n".join(lines))


@dataclass
class PeerItem:
    where: str
    external_id: str
    context: str
    outputs: list[str]


@dataclass
class PeerAnnotation:
    where: str
    item_id: str
    annotator: str
    # (criterion key, response or None) -> (value, the control it came from)
    answers: dict[tuple[str, int | None], tuple[object, str]] = field(default_factory=dict)


@dataclass
class PeerData:
    items: list[PeerItem]
    annotations: list[PeerAnnotation]
    skipped: int = 0  # cancelled (skipped) Label Studio annotations, which hold no answers


def read_peer(source: str, path: Path, mapping: Mapping) -> PeerData:
    if source == "label-studio":
        return read_label_studio(path, mapping)
    if source == "potato":
        return read_potato(path, mapping)
    raise ValueError(f"source: one of {', '.join(SOURCES)}")


def _item(where: str, data: object, mapping: Mapping, default_id: object, errors: list) -> PeerItem | None:
    if not isinstance(data, dict):
        errors.append((where, "data", "must be an object of task fields"))
        return None
    ok = True
    for name in (mapping.context, *mapping.outputs, *([mapping.id_field] if mapping.id_field else [])):
        if name not in data:
            errors.append((where, name, "missing from the task's data (the mapping names it)"))
            ok = False
        elif not isinstance(data[name], (str, int)) or isinstance(data[name], bool):
            errors.append((where, name, "must be text"))
            ok = False
    if not ok:
        return None
    external_id = data[mapping.id_field] if mapping.id_field else default_id
    return PeerItem(where, str(external_id), str(data[mapping.context]), [str(data[o]) for o in mapping.outputs])


def _place(annotation: PeerAnnotation, control: str, value: object, mapping: Mapping, errors: list) -> None:
    if control in mapping.ignore:
        return
    if control not in mapping.controls:
        errors.append((annotation.where, control, "not in the mapping (map it to a criterion or list it under ignore)"))
        return
    key = mapping.controls[control]
    if key in annotation.answers:
        errors.append((annotation.where, control, "answered twice"))
        return
    annotation.answers[key] = (value, control)


# ---------------------------------------------------------------- Label Studio


def _region_value(region: dict) -> tuple[object, str | None]:
    """A region's answer as a Concord value, or (None, why not)."""
    kind, value = region.get("type"), region.get("value")
    if not isinstance(value, dict):
        return None, "value: must be an object"
    if kind == "rating":
        return value.get("rating"), None
    if kind == "number":
        return value.get("number"), None
    if kind == "choices":
        choices = value.get("choices")
        if not isinstance(choices, list) or len(choices) != 1:
            return None, "choices: exactly one choice per control is imported"
        return choices[0], None
    if kind == "textarea":
        text = value.get("text")
        if not isinstance(text, list) or not all(isinstance(t, str) for t in text):
            return None, "text: must be a list of strings"
        return "\n".join(text), None
    return None, f"type {kind!r}: only rating, number, choices and textarea controls are imported"


def _annotator(raw: object) -> str:
    if isinstance(raw, dict):
        return str(raw.get("email") or raw.get("id"))
    return str(raw)


def read_label_studio(path: Path, mapping: Mapping) -> PeerData:
    try:
        tasks = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PeerFileError([(str(path), "", f"not a Label Studio JSON export: {exc}")]) from None
    if not isinstance(tasks, list):
        raise PeerFileError([(str(path), "", "a Label Studio JSON export is a list of tasks")])
    errors: list[tuple[str, str, str]] = []
    data = PeerData([], [])
    for index, task in enumerate(tasks, start=1):
        where = f"task {index} (id {task.get('id')})" if isinstance(task, dict) else f"task {index}"
        if not isinstance(task, dict):
            errors.append((where, "", "must be an object"))
            continue
        item = _item(where, task.get("data"), mapping, task.get("id"), errors)
        if item is None:
            continue
        data.items.append(item)
        for annotation in task.get("annotations") or []:
            a_where = f"{where}, annotation {annotation.get('id')}"
            if annotation.get("was_cancelled"):
                data.skipped += 1
                continue
            if annotation.get("completed_by") is None:
                errors.append((a_where, "completed_by", "missing: whose annotation is it?"))
                continue
            record = PeerAnnotation(a_where, item.external_id, _annotator(annotation["completed_by"]))
            for region in annotation.get("result") or []:
                control = str(region.get("from_name"))
                value, why = _region_value(region)
                if why:
                    errors.append((a_where, control, why))
                    continue
                _place(record, control, value, mapping, errors)
            data.annotations.append(record)
    if errors:
        raise PeerFileError(errors)
    return data


# ---------------------------------------------------------------- Potato


def _potato_items(project: Path, config: dict, mapping: Mapping, errors: list) -> list[PeerItem]:
    id_key = (config.get("item_properties") or {}).get("id_key", "id")
    items = []
    for name in config.get("data_files") or []:
        file = project / config.get("task_dir", ".") / name
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            errors.append((str(name), "", f"cannot read the data file: {exc}"))
            continue
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{name} line {number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append((where, "", f"not JSON: {exc.msg}"))
                continue
            if not isinstance(row, dict) or id_key not in row:
                errors.append((where, id_key, "missing (config item_properties.id_key)"))
                continue
            item = _item(where, row, mapping, row[id_key], errors)
            if item is not None:
                items.append(item)
    return items


def read_potato(path: Path, mapping: Mapping) -> PeerData:
    project = Path(path)
    config_path = project / "config.yaml"
    try:
        config = yaml_load(config_path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PeerFileError([(str(config_path), "", f"a Potato project folder holds its config.yaml: {exc}")]) from None
    errors: list[tuple[str, str, str]] = []
    data = PeerData(_potato_items(project, config, mapping, errors), [])
    known = {item.external_id for item in data.items}
    output = project / config.get("task_dir", ".") / config.get("output_annotation_dir", "annotation_output")
    states = sorted(output.glob("*/user_state.json"))
    if not states:
        errors.append((str(output), "", "no <user>/user_state.json: not a Potato annotation output folder"))
    for state_file in states:
        rel = state_file.relative_to(output)
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            errors.append((str(rel), "", f"not JSON: {exc}"))
            continue
        user = state.get("user_id") or state_file.parent.name
        for instance, labels in (state.get("instance_id_to_label_to_value") or {}).items():
            where = f"{rel}, instance {instance}"
            if instance not in known:
                errors.append((where, "instance_id", "not in the project's data files"))
                continue
            if not labels:
                continue
            record = PeerAnnotation(where, instance, str(user))
            by_schema: dict[str, list] = {}
            for entry in labels:
                if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], dict)):
                    errors.append((where, "", "a label is [{schema, name}, value]"))
                    continue
                by_schema.setdefault(str(entry[0].get("schema")), []).append(entry[1])
            for schema, values in by_schema.items():
                if len(values) != 1:
                    errors.append((where, schema, "more than one label: one answer per scheme is imported"))
                    continue
                _place(record, schema, values[0], mapping, errors)
            data.annotations.append(record)
    if errors:
        raise PeerFileError(errors)
    return data
