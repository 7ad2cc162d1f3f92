"""draw_humans: the next round of an active_inference study's items for human raters."""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from annotation.models import Study
from annotation.services.active_inference import ActiveDrawError, active_draw, active_prediction
from config.commands import ConcordCommand
from judges.selectors import study_jury


class Command(ConcordCommand):
    help = ("Draw the next round of a study's items for human raters under its active_inference sampling "
            "policy: round 0 is a uniform pilot, each later round gives the next items probabilities that grow "
            "with the residual size predicted from the judges' disagreement (learned from the ratings so far). "
            "Each item's probability is stored and goes with its ratings into every export. --predict prints "
            "what the policy should save instead, and draws nothing.")

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument("--predict", action="store_true", help="print the predicted saving; draw nothing")
        parser.add_argument("--seed", type=int, default=None, help="seed of the draw (default: fresh randomness)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        study = Study.objects.filter(slug=opts["study"]).first()
        if study is None:
            raise CommandError(f"no study {opts['study']!r}")
        jury = study_jury(study)
        try:
            out = (active_prediction(study=study, jury=jury) if opts["predict"]
                   else active_draw(study=study, jury=jury, seed=opts["seed"]))
        except ActiveDrawError as exc:
            raise CommandError(str(exc)) from exc
        if opts["json"]:
            self.stdout.write(json.dumps(out))
        elif opts["predict"]:
            if "saving" not in out:
                self.stdout.write(f"no prediction: {out['reason']}")
            else:
                self.stdout.write(f"{out['items']} items, budget {out['budget']}, floor {out['floor']:g}: "
                                  f"{out['saving']:.0%} fewer human ratings than uniform sampling for the same width "
                                  f"(from the {out['source']}, {out['rated_items']} rated items; at best "
                                  f"{out['oracle_saving']:.0%})")
        else:
            self.stdout.write(f"round {out['round']}: {out['items']} items, {out['drawn']} drawn for humans "
                              f"({out['expected']:.1f} expected), {out['left']} items left to draw")
