"""study_report SLUG --format html|csv|json [--out PATH]"""

from __future__ import annotations

from django.core.management.base import CommandError

from annotation.datasets.writers import write_file
from annotation.models import Study
from annotation.reports.downloads import DOWNLOADS, report_bytes
from annotation.reports.study import DEFAULT_ICC_THRESHOLD
from config.commands import ConcordCommand


class Command(ConcordCommand):
    help = ("Write a study's report: html (standalone, plots inline), csv (tidy rows: section, criterion, "
            "subject, statistic, value, CI, reason) or json (the whole report). The same bytes as the "
            "report page's downloads. Writes to --out, or to standard output.")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the study's slug")
        parser.add_argument("--format", dest="fmt", required=True, metavar="{" + ",".join(DOWNLOADS) + "}",
                            help="html, csv or json")
        parser.add_argument("--out", help="file to write (written whole or not at all); default: stdout")
        parser.add_argument("--icc-threshold", type=float, default=DEFAULT_ICC_THRESHOLD,
                            help=f"ICC acceptance threshold, 0..1 (default {DEFAULT_ICC_THRESHOLD}, seed 002)")

    def handle(self, *args, slug: str, fmt: str, out: str | None, icc_threshold: float, **opts):
        if fmt not in DOWNLOADS:
            raise CommandError(f"--format {fmt!r} is not a report format; choose one of {', '.join(DOWNLOADS)}")
        if not 0.0 <= icc_threshold <= 1.0:
            raise CommandError(f"--icc-threshold {icc_threshold:g} is outside 0..1")
        study = Study.objects.select_related("rubric_version").filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r}")
        data = report_bytes(study, fmt, threshold=icc_threshold)
        if out:
            written = write_file([data], out)
            self.stderr.write(f"wrote {written.path}: {written.size} bytes, sha256 {written.sha256}")
            return
        stream = self.stdout._out  # the real stream behind Django's OutputWrapper
        binary = getattr(stream, "buffer", None)
        if binary is None:  # a text stream (call_command(stdout=StringIO()))
            stream.write(data.decode())
            return
        stream.flush()
        binary.write(data)
        binary.flush()
