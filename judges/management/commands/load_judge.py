from pathlib import Path

from django.core.management.base import CommandError

from config.commands import ConcordCommand
from judges.config import JudgeConfigError
from judges.services.configs import judge_configs_load


class Command(ConcordCommand):
    help = ("Add or update judge configurations from a YAML/JSON file (one judge, or several under `judges:`). "
            "All or nothing. API keys are never read from the file: set api_key_env to a variable NAME.")

    def add_arguments(self, parser):
        parser.add_argument("file", help="judge configuration, .yaml or .json")

    def handle(self, *args, file: str, **options):
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            saved = judge_configs_load(text=path.read_text(encoding="utf-8"), filename=path.name)
        except JudgeConfigError as exc:
            lines = "\n".join(f"  {p or path.name}: {m}" for p, m in exc.errors)
            raise CommandError(f"{file}: refused, nothing was saved\n{lines}") from exc
        except UnicodeDecodeError as exc:
            raise CommandError(f"{file}: not UTF-8 text (byte {exc.start})") from exc
        for judge, created in saved:
            self.stdout.write(f"{'added' if created else 'updated'} judge {judge.name} "
                              f"({judge.provider or judge.backend} {judge.model}, method {judge.method})")
