from pathlib import Path

from django.core.management.base import CommandError

from config.commands import ConcordCommand
from rubrics.loader import RubricError, parse_rubric_text
from rubrics.services import rubric_version_create


class Command(ConcordCommand):
    help = "Add a rubric, or its next version, from a YAML or JSON file (see docs/rubric-format.md)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="rubric file, .yaml/.yml or .json")

    def handle(self, *args, file: str, **options):
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            data = parse_rubric_text(path.read_text(encoding="utf-8"), filename=path.name)
            version, created = rubric_version_create(data=data)
        except RubricError as exc:
            raise CommandError(f"{file}: invalid rubric\n{exc}") from exc
        state = "created" if created else "unchanged, already stored as"
        self.stdout.write(f"{version.rubric.slug}: {state} version {version.version} ({len(version.criteria)} criteria)")
