"""MkDocs hook: the reference pages that are generated from the code, so they cannot drift from it.

- reference/commands.md: every management command of Concord's apps, from its own argument parser
  (`create_parser`, the parser `manage.py CMD --help` prints).
- reference/api.md and reference/openapi.json: the REST API from the OpenAPI schema drf-spectacular builds
  (the one `/api/schema/` serves).
- reference/limits.md: the table of limits, config/limits.py.

Neither needs a database: Django is set up with the project's settings, nothing is queried.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
APPS = ("config", "rubrics", "annotation", "judges")  # the project's own apps (config: the project itself)
# Options every Django command has; listed once on the page instead of under each command.
COMMON = {"help", "version", "verbosity", "settings", "pythonpath", "traceback", "no_color", "force_color",
          "skip_checks"}


def on_files(files, config):
    _django_setup()
    files.append(File.generated(config, "reference/commands.md", content=commands_page()))
    schema = _openapi_schema()
    files.append(File.generated(config, "reference/api.md", content=api_page(schema)))
    files.append(File.generated(config, "reference/openapi.json", content=json.dumps(schema, indent=1)))
    files.append(File.generated(config, "reference/limits.md", content=limits_page()))
    return files


def _django_setup() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


# ---------------------------------------------------------------------------------------- commands


def commands_page() -> str:
    from django.core.management import get_commands, load_command_class

    names = sorted((app, name) for name, app in get_commands().items() if app in APPS)
    lines = [
        "# Management commands",
        "",
        "Generated from each command's own argument parser when the site is built (what",
        "`.venv/bin/python manage.py COMMAND --help` prints). Every command also takes Django's common",
        "options (`-v/--verbosity`, `--settings`, `--pythonpath`, `--traceback`, `--no-color`, `--force-color`,",
        "`--skip-checks`); they are not repeated below.",
        "",
        "| command | app | what it does |",
        "|---|---|---|",
    ]
    parsers = []
    for app, name in names:
        command = load_command_class(app, name)
        parser = command.create_parser("manage.py", name)
        parsers.append((app, name, parser))
        first = (parser.description or "").replace("%%", "%").split(". ")[0].rstrip(".")
        lines.append(f"| [`{name}`](#{name}) | {app} | {_cell(first)} |")
    for app, name, parser in parsers:
        lines += ["", f"## {name}", "", _cell((parser.description or "").replace("%%", "%")), "", "```text",
                  _usage(parser), "```", ""]
        rows = [_argument_row(parser, action) for action in parser._actions if action.dest not in COMMON]
        if rows:
            lines += ["| argument | meaning | default |", "|---|---|---|", *rows]
    return "\n".join(lines) + "\n"


def _usage(parser: argparse.ArgumentParser) -> str:
    # The usage line without Django's common options, which every command shares.
    formatter = parser._get_formatter()
    own = [a for a in parser._actions if a.dest not in COMMON]
    formatter.add_usage(parser.usage, own, parser._mutually_exclusive_groups, prefix="")
    return formatter.format_help().strip()


def _argument_row(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if action.option_strings:
        name = ", ".join(action.option_strings)
        if action.nargs != 0:
            name += " " + (action.metavar or action.dest.upper())
    else:
        name = action.metavar or action.dest
    meaning = parser._get_formatter()._expand_help(action) if action.help else ""  # "%(default)s", "%%" as --help
    if action.choices:
        meaning += f" (one of: {', '.join(map(str, action.choices))})"
    if action.required or not action.option_strings:
        meaning = "**required.** " + meaning
    default = "" if action.default in (None, False, argparse.SUPPRESS) or action.nargs == 0 else action.default
    return f"| `{_cell(name)}` | {_cell(meaning)} | {_cell(default)} |"


# --------------------------------------------------------------------------------------------- API


def _openapi_schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def api_page(schema: dict) -> str:
    info = schema["info"]
    lines = [
        "# REST API",
        "",
        f"{info.get('description', '')} Generated from the OpenAPI schema ({info['title']} {info['version']})",
        "when the site is built: the same schema a running Concord serves at `/api/schema/`, with browsable",
        "docs at `/api/docs/`. The schema itself: [openapi.json](openapi.json).",
        "",
        "Every endpoint takes a session (the browser's) or a token (`Authorization: Token …`; make one with",
        "`manage.py drf_create_token USERNAME`). Who may call what follows one access rule: admins may do",
        "everything, a study's researchers read it, its annotators rate their own assignments; anyone else",
        "gets 404. Errors are JSON: `{\"detail\": …}` and, for a refused upload or form, `errors` naming each",
        "line and field.",
        "",
    ]
    groups: dict[str, list[tuple[str, str, dict]]] = {}
    for path, operations in schema["paths"].items():
        for method, op in operations.items():
            tag = (op.get("tags") or [path.strip("/").split("/")[1]])[0]
            groups.setdefault(tag, []).append((method.upper(), path, op))
    for tag in sorted(groups):
        lines += [f"## {tag}", ""]
        for method, path, op in groups[tag]:
            lines += [f"### `{method} {path}`", ""]
            text = op.get("description") or op.get("summary") or ""
            if text:
                lines += [_cell(text), ""]
            params = op.get("parameters") or []
            if params:
                lines += ["| parameter | in | type | meaning |", "|---|---|---|---|"]
                for p in params:
                    kind = (p.get("schema") or {}).get("type", "")
                    req = "**required.** " if p.get("required") else ""
                    lines.append(f"| `{p['name']}` | {p['in']} | {kind} | {req}{_cell(p.get('description', ''))} |")
                lines.append("")
            body, fields = _body(op, schema)
            if body:
                lines += [f"Request body: {body}.", ""]
            if fields:
                lines += ["| field | type | meaning |", "|---|---|---|", *fields, ""]
            codes = ", ".join(f"`{code}`" for code in op.get("responses", {}))
            lines += [f"Responses: {codes}.", ""]
    return "\n".join(lines)


def _body(op: dict, schema: dict) -> tuple[str, list[str]]:
    """The request body's media types, and the fields of its schema as table rows."""
    content = (op.get("requestBody") or {}).get("content") or {}
    parts, refs = [], []
    for media, spec in content.items():
        ref = (spec.get("schema") or {}).get("$ref", "")
        parts.append(f"`{media}`")
        refs.append(ref)
    if not refs or not refs[0]:
        return ", ".join(parts), []
    component = schema.get("components", {}).get("schemas", {}).get(refs[0].rsplit("/", 1)[-1], {})
    required = set(component.get("required", []))
    rows = []
    for name, prop in component.get("properties", {}).items():
        if prop.get("readOnly"):
            continue
        kind = prop.get("type") or prop.get("$ref", "").rsplit("/", 1)[-1] or "object"
        if prop.get("enum"):
            kind += " (" + ", ".join(map(str, prop["enum"])) + ")"
        req = "**required.** " if name in required else ""
        rows.append(f"| `{name}` | {_cell(kind)} | {req}{_cell(prop.get('description', ''))} |")
    return ", ".join(parts), rows


# ---------------------------------------------------------------------------------------- limits


def limits_page() -> str:
    from config.limits import LIMITS

    lines = [
        "# Limits",
        "",
        "Generated from `config/limits.py` when the site is built: every size, count and rate Concord accepts.",
        "Input past a limit is refused where it enters (forms, the API, the rating loop, uploads) with a message",
        "that names the field and the limit, and nothing of it is stored; a quota past its limit is answered with",
        "HTTP 429. Text Concord writes itself (errors, a judge's answer) is cut to its limit instead. Text limits",
        "count characters. A deployment may change a value with the `CONCORD_LIMITS` environment variable",
        "(JSON, key: value; [settings](settings.md)).",
        "",
        "| Limit | Value | Unit | Where | Bounds |",
        "|---|---:|---|---|---|",
    ]
    for lim in LIMITS.values():
        fields = ", ".join(f"`{f}`" for f in lim.fields) + (" (cut, not refused)" if lim.written_by_concord else "")
        lines.append(f"| `{lim.key}` | {lim.value:,} | {lim.unit} | {_cell(lim.what)} | {fields} |")
    return "\n".join(lines) + "\n"
