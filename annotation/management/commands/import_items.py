from pathlib import Path

from django.core.management.base import CommandError

from annotation.importers import ItemFileError
from annotation.models import Study
from annotation.traces.files import FORMATS as TRACE_FORMATS
from annotation.traces.imports import file_import
from config.commands import ConcordCommand


class Command(ConcordCommand):
    help = ("Import items into a study from a JSONL or CSV file (docs/item-format.md), or trajectories from a trace "
            "or log file (OTLP JSON, Inspect AI, Langfuse, Phoenix, OpenAI JSONL; docs/how-to/traces-to-report.md). "
            "All or nothing.")

    def add_arguments(self, parser):
        parser.add_argument("file", help="items file (.jsonl, .csv) or a trace or log file")
        parser.add_argument("--study", required=True, help="study slug")
        parser.add_argument("--format", choices=["jsonl", "csv", *TRACE_FORMATS],
                            help="override detection by the file's name and first bytes; "
                                 + "; ".join(f"{k}: {v}" for k, v in TRACE_FORMATS.items()))

    def handle(self, *args, file: str, study: str, **options):
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            target = Study.objects.select_related("rubric_version").get(slug=study)
        except Study.DoesNotExist as exc:
            raise CommandError(f"no study with slug {study!r}") from exc
        try:
            with path.open("rb") as items_file:
                count = file_import(study=target, file=items_file, filename=path.name, fmt=options.get("format"))
        except ItemFileError as exc:
            raise CommandError(f"{file}: refused, nothing was imported\n{exc}") from exc
        except UnicodeDecodeError as exc:
            raise CommandError(f"{file}: not UTF-8 text") from exc
        self.stdout.write(f"{study}: imported {count} items")
