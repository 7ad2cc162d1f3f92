"""The mapping file (YAML or JSON) that says how a peer's fields land on a study's rubric. Pure.

    id: item                      # the task field with the item's id (Label Studio; default: the task id)
    context: review               # the task field shown as the item's context
    outputs: [response_1, response_2, response_3]   # the task fields that are the outputs, in order
    criteria:                     # criterion key -> its control/scheme per output (a list, Response 1 first)
      fluency: [fluency_r1, fluency_r2, fluency_r3]
      overall_note: notes         # or one name, for a criterion about the whole item
    ignore: [notes_r1]            # controls in the file that are deliberately not imported
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from rubrics.yaml_bounded import yaml_load


class MappingError(ValueError):
    """The mapping file is wrong; the message names the key."""


@dataclass(frozen=True)
class Mapping:
    context: str
    outputs: tuple[str, ...]
    controls: dict[str, tuple[str, int | None]]  # control/scheme name -> (criterion key, response or None)
    id_field: str | None = None
    ignore: frozenset[str] = frozenset()


def mapping_parse(text: str, *, rubric: dict) -> Mapping:
    """Parse and check a mapping against `rubric` (a rubric definition); MappingError names the key."""
    try:
        raw = yaml_load(text)
    except yaml.YAMLError as exc:
        raise MappingError(f"mapping: not YAML or JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise MappingError("mapping: must be an object with context, outputs and criteria")
    unknown = sorted(set(raw) - {"id", "context", "outputs", "criteria", "ignore"})
    if unknown:
        raise MappingError(f"mapping: unknown key(s) {', '.join(unknown)}")
    context, outputs, criteria = raw.get("context"), raw.get("outputs"), raw.get("criteria")
    if not isinstance(context, str) or not context:
        raise MappingError("mapping: context: the name of the task field holding the context")
    if not isinstance(outputs, list) or not outputs or not all(isinstance(o, str) and o for o in outputs):
        raise MappingError("mapping: outputs: a list of the task fields holding the outputs")
    if not isinstance(criteria, dict) or not criteria:
        raise MappingError("mapping: criteria: criterion key -> control name(s)")
    by_key = {c["key"]: c for c in rubric["criteria"]}
    controls: dict[str, tuple[str, int | None]] = {}
    for key, names in criteria.items():
        if key not in by_key:
            raise MappingError(f"mapping: criteria.{key}: the rubric has no such criterion "
                               f"(it has {', '.join(by_key)})")
        per_item = by_key[key]["target"] == "item"
        if per_item != isinstance(names, str):
            raise MappingError(f"mapping: criteria.{key}: " + ("one control name (the criterion is about the item)"
                                                                 if per_item else "a list of control names, one per output"))
        placed = [(names, None)] if per_item else list(zip(names, range(1, len(names) + 1)))
        if not per_item and len(names) > len(outputs):
            raise MappingError(f"mapping: criteria.{key}: {len(names)} controls for {len(outputs)} outputs")
        for name, response in placed:
            if not isinstance(name, str) or not name:
                raise MappingError(f"mapping: criteria.{key}: control names are non-empty strings")
            if name in controls:
                raise MappingError(f"mapping: criteria.{key}: control {name!r} is mapped twice")
            controls[name] = (key, response)
    ignore = raw.get("ignore") or []
    if not isinstance(ignore, list) or not all(isinstance(n, str) for n in ignore):
        raise MappingError("mapping: ignore: a list of control names")
    id_field = raw.get("id")
    if id_field is not None and not (isinstance(id_field, str) and id_field):
        raise MappingError("mapping: id: the name of the task field holding the item id")
    return Mapping(context=context, outputs=tuple(outputs), controls=controls, id_field=id_field,
                   ignore=frozenset(ignore))
