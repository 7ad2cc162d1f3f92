"""The one YAML reader for every file a user gives Concord (rubrics, participant phases, judges,
peer-tool mappings and configs). Pure code, no Django.

    yaml_load(text) -> Any        # like yaml.safe_load; YamlTooLarge (a yaml.YAMLError) when refused

Anchors and aliases (`&a`, `*a`) are allowed, but measured before anything is built: PyYAML shares
an aliased node, so a few hundred bytes of nested aliases ("billion laughs") make a tree of a
billion values the moment a validator, json.dumps or the database walks it. The tree the aliases
would expand to is counted over the composed nodes (each counted once, memoised), and a document
whose expansion exceeds MAX_EXPANDED_NODES, or whose aliases loop, is refused by a message that
says so and where. Documents without aliases are not limited here (their size is their file's).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

MAX_EXPANDED_NODES = 100_000


class YamlTooLarge(yaml.MarkedYAMLError):
    """Refused before construction; `problem` says why, `problem_mark` where (as PyYAML's own errors)."""


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _expanded_size(root: Node) -> int:
    """The number of values the document has once every alias is written out; iterative, memoised
    per node, so the cost is that of the composed nodes whatever they expand to."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in _children(node))
            if size[key] > MAX_EXPANDED_NODES:
                raise YamlTooLarge(None, None, f"anchors and aliases expand this document to more than "
                                               f"{MAX_EXPANDED_NODES:,} values; write the values out instead",
                                   node.start_mark)
            continue
        if key in size:
            continue
        if key in on_path:
            raise YamlTooLarge(None, None, "an alias refers to the node that contains it (a loop)", node.start_mark)
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in size)
    return size[id(root)]


def yaml_load(text: str) -> Any:
    """yaml.safe_load, with aliases bounded before the document is built. Nesting too deep for the
    parser's recursion is a YAMLError too, so every caller's one `except yaml.YAMLError` covers it."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node)
        return loader.construct_document(node)
    except RecursionError:
        raise YamlTooLarge(None, None, "nested too deeply", None) from None
    finally:
        loader.dispose()
