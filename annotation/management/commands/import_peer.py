"""import_peer --from label-studio|potato PATH --mapping FILE (--study SLUG | --create-study NAME --rubric SLUG [--open])"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from annotation.models import Study
from annotation.peers.mapping import MappingError
from annotation.peers.readers import SOURCES, PeerFileError
from annotation.peers.services import peer_import, peer_import_new_study
from annotation.services.studies import StudyError
from config.commands import ConcordCommand
from rubrics.selectors import UnknownRubric
from rubrics.services import rubric_version_for_slug


class Command(ConcordCommand):
    help = ("Import a Label Studio JSON export (PATH: the export file) or a Potato project (PATH: the folder with "
            "config.yaml and its annotation output): items and ratings, mapped onto the study's rubric by "
            "--mapping (see annotation/peers/mapping.py). Into an open study (--study), or into a new one made "
            "from the file (--create-study NAME --rubric SLUG; --open leaves it open to raters, else it is left "
            "paused, or a draft when the file has no annotations). All or nothing.")

    def add_arguments(self, parser):
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--study", help="the open study's slug")
        target.add_argument("--create-study", metavar="NAME", help="make a new study of this name from the file")
        parser.add_argument("--rubric", help="with --create-study: rubric slug (a stored rubric, else a preset)")
        parser.add_argument("--open", dest="open_study", action="store_true", help="with --create-study: leave the new study open")
        parser.add_argument("--from", dest="source", choices=SOURCES, required=True)
        parser.add_argument("path", type=Path)
        parser.add_argument("--mapping", type=Path, required=True, help="YAML or JSON mapping file")

    def handle(self, *args, study: str | None, create_study: str | None, rubric: str | None, open_study: bool,
               source: str, path: Path, mapping: Path, **opts):
        if create_study is None and (rubric or open_study):
            raise CommandError("--rubric and --open go with --create-study; --study imports into an existing study")
        if create_study is not None and not rubric:
            raise CommandError("--create-study needs --rubric SLUG: the rubric the new study's raters answer")
        target = None
        if study is not None:
            target = Study.objects.select_related("rubric_version").filter(slug=study).first()
            if target is None:
                raise CommandError(f"no study with slug {study!r}")
        try:
            mapping_text = mapping.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"--mapping: {exc}") from None
        try:
            if target is not None:
                result = peer_import(study=target, source=source, path=path, mapping_text=mapping_text)
            else:
                target, result = peer_import_new_study(
                    name=create_study, rubric_version=rubric_version_for_slug(rubric), source=source, path=path,
                    mapping_text=mapping_text, open_study=open_study)
        except UnknownRubric as exc:
            raise CommandError(f"--rubric: {exc}") from None
        except StudyError as exc:
            raise CommandError(f"--create-study: {exc}") from None
        except (MappingError, PeerFileError) as exc:
            raise CommandError(f"nothing imported:\n{exc}") from None
        ratings = ", ".join(f"{key} {n}" for key, n in sorted(result.ratings.items()))
        if create_study is not None:
            next_step = {"paused": "; resume it when raters may start", "draft": "; open it when raters may start"}
            self.stdout.write(f"created study {target.slug} ({target.status}{next_step.get(target.status, '')}) on "
                              f"rubric {target.rubric_version.rubric.slug} v{target.rubric_version.version}")
        self.stdout.write(f"imported {result.items_created} items ({result.outputs_created} outputs; "
                          f"{result.items_existing} already in the study), {result.annotations} annotations by "
                          f"{result.raters} raters ({result.skipped} skipped in the file); ratings: {ratings}")
