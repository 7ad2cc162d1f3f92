import json
import sys

from django.core.management.base import CommandError

from config.commands import ConcordCommand
from judges.methods.answers import KNOWN_METHODS, AnswerError, as_report, parse_answer
from rubrics.selectors import UnknownRubric, rubric_definition


class Command(ConcordCommand):
    help = ("Parse one raw judge answer exactly as a judge run of RUBRIC and METHOD would, and print JSON "
            '{"<criterion>": {"value", "status": "parsed"|"unparsed", "detail"}} for every criterion the answer is for. '
            "FILE '-' reads standard input.")

    def add_arguments(self, parser):
        parser.add_argument("--rubric", required=True, help="rubric slug (stored, or a built-in preset)")
        parser.add_argument("--method", required=True, help=f"judge method: {', '.join(KNOWN_METHODS)}")
        parser.add_argument("--criterion", help="criterion key (needed by one-criterion-per-call methods)")
        parser.add_argument("--output-format", choices=("first_line", "json"),
                            help="one-criterion prompts: the judge's method_options.output_format")
        parser.add_argument("file", metavar="FILE", help="the raw answer; '-' for standard input")

    def handle(self, *args, rubric: str, method: str, criterion: str | None, output_format: str | None,
               file: str, **options):
        try:
            definition = rubric_definition(rubric)
        except UnknownRubric as exc:
            raise CommandError(f"--rubric: {exc}") from None
        text = self.read(file)
        try:
            results = parse_answer(definition, method, text, criterion=criterion, output_format=output_format)
        except AnswerError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(as_report(results), ensure_ascii=False, indent=2))

    @staticmethod
    def read(file: str) -> str:
        if file == "-":
            return sys.stdin.read()
        try:
            with open(file, encoding="utf-8") as fh:
                return fh.read()
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise CommandError(f"{file} is not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
