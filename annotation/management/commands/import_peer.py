"""import_peer --study SLUG --from label-studio|potato PATH --mapping FILE"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from annotation.peers.mapping import MappingError
from annotation.peers.readers import SOURCES, PeerFileError
from annotation.peers.services import peer_import


class Command(BaseCommand):
    help = ("Import a Label Studio JSON export (PATH: the export file) or a Potato project (PATH: the folder with "
            "config.yaml and its annotation output) into an open study: items and ratings, mapped onto the study's "
            "rubric by --mapping (see annotation/peers/mapping.py). All or nothing.")

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument("--from", dest="source", choices=SOURCES, required=True)
        parser.add_argument("path", type=Path)
        parser.add_argument("--mapping", type=Path, required=True, help="YAML or JSON mapping file")

    def handle(self, *args, study: str, source: str, path: Path, mapping: Path, **opts):
        target = Study.objects.select_related("rubric_version").filter(slug=study).first()
        if target is None:
            raise CommandError(f"no study with slug {study!r}")
        try:
            mapping_text = mapping.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"--mapping: {exc}") from None
        try:
            result = peer_import(study=target, source=source, path=path, mapping_text=mapping_text)
        except (MappingError, PeerFileError) as exc:
            raise CommandError(f"nothing imported:\n{exc}") from None
        ratings = ", ".join(f"{key} {n}" for key, n in sorted(result.ratings.items()))
        self.stdout.write(f"imported {result.items_created} items ({result.outputs_created} outputs; "
                          f"{result.items_existing} already in the study), {result.annotations} annotations by "
                          f"{result.raters} raters ({result.skipped} skipped in the file); ratings: {ratings}")
