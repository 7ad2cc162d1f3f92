from pathlib import Path

from django.core.management.base import CommandError

from config.commands import ConcordCommand
from judges.config import METHOD_NAMES, JudgeConfigError, parse_judges_text, validate_judge
from rubrics.selectors import UnknownRubric, rubric_definition


class Command(ConcordCommand):
    help = ("Print, sending nothing, the exact HTTP request(s) a judge file's judge(s) would send for a stand-in "
            "item: method, URL, headers (API key masked) and JSON body, as each judge's provider builds them.")

    def add_arguments(self, parser):
        parser.add_argument("file", help="judge file, .yaml or .json (one judge, or several under `judges:`)")
        parser.add_argument("--rubric", required=True, help="rubric slug (a stored rubric, else a built-in preset)")
        parser.add_argument("--method", choices=METHOD_NAMES, help="ask with this method instead of the file's")
        parser.add_argument("--json", action="store_true", help="a JSON list of the requests")
        parser.add_argument("--trajectory", action="store_true",
                            help="a stand-in agent trajectory as the output (the default where the rubric asks "
                                 "per step)")
        parser.add_argument("--item", metavar="FILE",
                            help="preview with an item of this items file (JSONL or CSV, checked as an upload is) "
                                 "instead of a stand-in")
        parser.add_argument("--line", type=int, default=1, help="which item of --item (1: the first)")

    def handle(self, *args, file: str, rubric: str, method: str | None, json: bool, trajectory: bool = False,
               item: str | None = None, line: int = 1, **options):
        import json as jsonlib

        from judges.services.requests import planned_requests

        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            judges = parse_judges_text(path.read_text(encoding="utf-8"), filename=path.name)
            if method:
                judges = [self._with_method(j, method) for j in judges]
        except JudgeConfigError as exc:
            lines = "\n".join(f"  {p or path.name}: {m}" for p, m in exc.errors)
            raise CommandError(f"{file}: refused\n{lines}") from exc
        try:
            definition = rubric_definition(rubric)
        except UnknownRubric as exc:
            raise CommandError(f"--rubric: {exc}") from None
        chosen = self._item(item, line) if item else None
        planned = []
        for judge in judges:
            try:
                planned += planned_requests(judge, definition, item=chosen, trajectory=trajectory or None)
            except (ValueError, KeyError) as exc:
                raise CommandError(f"judge {judge['name']}: {exc}") from exc
        if json:
            self.stdout.write(jsonlib.dumps([p.as_dict() for p in planned], indent=2, ensure_ascii=False))
            return
        if planned and planned[0].truncation_rule:
            self.stdout.write(f"# truncation rule: {planned[0].truncation_rule}")
            self.stdout.write("")
        for n, p in enumerate(planned, 1):
            r = p.request
            self.stdout.write(f"# {n}/{len(planned)} judge {p.judge} (provider {p.provider})")
            self.stdout.write(f"{r.method} {r.url}")
            for k, v in r.headers.items():
                self.stdout.write(f"{k}: {v}")
            self.stdout.write("")
            self.stdout.write(jsonlib.dumps(r.json, indent=2, ensure_ascii=False))
            self.stdout.write("")

    @staticmethod
    def _item(file: str, line: int) -> dict:
        """Item `line` of an items file, read and checked as an upload is (a trajectory normalised)."""
        from annotation.importers import ItemFileError, parse_items

        path = Path(file)
        if not path.is_file():
            raise CommandError(f"--item: {file}: no such file")
        try:
            items = parse_items(path.read_text(encoding="utf-8"), filename=path.name)
        except ItemFileError as exc:
            raise CommandError(f"--item: {file}: refused\n{exc}") from None
        if not 1 <= line <= len(items):
            raise CommandError(f"--line: {file} has {len(items)} item(s), not an item {line}")
        chosen = items[line - 1]
        return {"id": chosen.external_id, "context": chosen.context, "context_kind": chosen.context_kind,
                "metadata": chosen.metadata,
                "outputs": [{"content": o.content, "kind": o.kind, "metadata": o.metadata} for o in chosen.outputs]}

    @staticmethod
    def _with_method(judge: dict, method: str) -> dict:
        data = {**judge, "method": method}
        if method == "geval":
            data["mode"] = "logprobs"
        elif judge["mode"] == "logprobs":
            data["mode"] = "generate"
        data["method_options"] = {k: v for k, v in judge["method_options"].items()
                                  if k in ("chunk_size", "use_cache", "output_format")}
        return validate_judge(data)
