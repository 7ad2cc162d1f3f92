"""export_study SLUG --format csv|jsonl|parquet|pairs|consensus|hf|label-studio [--out PATH] [--delta 0.5]"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from annotation.datasets import FORMATS, export_chunks
from annotation.datasets import DEFAULT_DELTA, UNRELEASED
from annotation.datasets.writers import write_file, write_stream
from annotation.models import Study
from annotation.peers.label_studio_export import label_studio_chunks, labeling_config
from config.commands import ConcordCommand

LABEL_STUDIO = "label-studio"


class Command(ConcordCommand):
    help = ("Export a study's ratings: csv, jsonl or parquet (long format, one row per rating), pairs "
            "(RLHF preference pairs, seed 002 schema), consensus (per-output consensus table) or label-studio (items "
            "and judge scores as Label Studio tasks with predictions; with --out, the labeling config beside it). "
            "Writes to --out, or to standard output.")

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the study's slug")
        parser.add_argument("--format", dest="fmt", choices=[*FORMATS, LABEL_STUDIO], required=True)
        parser.add_argument("--out", help="file to write (written whole or not at all); default: stdout")
        parser.add_argument("--delta", type=float, default=DEFAULT_DELTA,
                            help=f"pairs: minimum overall difference (default {DEFAULT_DELTA}); smaller "
                                 "differences are ties or near-ties and give no pair")
        parser.add_argument("--dataset-version", default=UNRELEASED,
                            help=f"pairs: the metadata.dataset_version to write (default {UNRELEASED})")

    def handle(self, *args, slug: str, fmt: str, out: str | None, delta: float, dataset_version: str, **opts):
        study = Study.objects.select_related("rubric_version").filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r}")
        if fmt == "pairs" and not delta > 0:
            raise CommandError("--delta must be positive (ties are never pairs)")
        if fmt == LABEL_STUDIO:
            chunks = label_studio_chunks(study)
        else:
            chunks = export_chunks(study, fmt, delta=delta, dataset_version=dataset_version)
        if out:
            written = write_file(chunks, out)
            if fmt == LABEL_STUDIO:
                tasks = Path(written.path)
                config = tasks.with_name(f"{tasks.stem}.labeling_config.xml")
                config.write_text(labeling_config(study))
                self.stderr.write(f"wrote {config}: the labeling config the tasks fit")
            self.stderr.write(f"wrote {written.path}: {written.size} bytes, sha256 {written.sha256}")
            return
        stream = self.stdout._out  # the real stream behind Django's OutputWrapper
        binary = getattr(stream, "buffer", None)
        if fmt in ("parquet", "hf") and (binary is None or stream.isatty()):
            raise CommandError(f"{fmt} is binary: give --out PATH or redirect standard output to a file")
        if binary is None:  # a text stream (call_command(stdout=StringIO())): text formats only
            stream.write(b"".join(chunks).decode())
            return
        stream.flush()
        sha, size = write_stream(chunks, binary)
        binary.flush()
        self.stderr.write(f"{size} bytes, sha256 {sha}")
