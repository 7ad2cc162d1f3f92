"""simulate_policy: a sampling policy against planted truth, before any money is spent."""

from __future__ import annotations

import json
import platform
import time
from datetime import datetime, timezone

from django.core.management.base import CommandError

from annotation.stats.policy_sim import simulate_active, simulate_peeking
from config.commands import ConcordCommand


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


class Command(ConcordCommand):
    help = ("Simulate a sampling policy on planted truth and print what it saves and whether its intervals "
            "hold. --policy active: human ratings sent where the judges are unsure (active statistical "
            "inference, π ∝ the residual size predicted from the ratings so far) vs the best uniform "
            "PPI++ design, for the same interval width, at several correlations of a jury's spread with "
            "the judge's error, each reached three ways; coverage of the 95%% intervals. --policy peeking: "
            "null studies checked after every rating; false 'significant' verdicts of the anytime-valid "
            "confidence sequence vs the fixed-sample interval. docs/active-sampling.md explains the model.")
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("--policy", choices=["active", "peeking", "both"], default="both")
        parser.add_argument("--replications", type=int, default=500, help="simulated studies per correlation")
        parser.add_argument("--items", type=int, default=2000, help="items (outputs) per study")
        parser.add_argument("--budget", type=int, default=200, help="expected human ratings per study")
        parser.add_argument("--correlations", default="0,0.25,0.5,0.75",
                            help="comma-separated correlations of the uncertainty with the judge's |error|")
        parser.add_argument("--mechanisms", default="unequal_jury,shared_mistakes,human_noise",
                            help="how the correlation is lowered from the base jury: noisier weak judges "
                                 "(unequal_jury), shared mistakes, human noise (comma-separated)")
        parser.add_argument("--no-oracle", action="store_true", help="skip the design that knows the map u -> E[r^2|u]")
        parser.add_argument("--studies", type=int, default=1000, help="null studies (peeking)")
        parser.add_argument("--ratings", type=int, default=500, help="ratings per null study (peeking)")
        parser.add_argument("--seed", type=int, default=58)
        parser.add_argument("--json", action="store_true", help="print the results as JSON")

    def handle(self, *args, **opts):
        started = time.perf_counter()
        out = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}"}
        try:
            if opts["policy"] in ("active", "both"):
                correlations = tuple(float(c) for c in opts["correlations"].split(","))
                if any(not 0 <= c < 1 for c in correlations):
                    raise ValueError("--correlations must lie in [0, 1)")
                out["active"] = simulate_active(correlations=correlations, replications=opts["replications"],
                                                mechanisms=tuple(opts["mechanisms"].split(",")), items=opts["items"],
                                                budget=opts["budget"], oracle=not opts["no_oracle"], seed=opts["seed"])
            if opts["policy"] in ("peeking", "both"):
                out["peeking"] = simulate_peeking(studies=opts["studies"], ratings=opts["ratings"], seed=opts["seed"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        out["seconds"] = round(time.perf_counter() - started, 1)
        if opts["json"]:
            self.stdout.write(json.dumps(out, indent=2))
            return
        self._print(out)

    def _print(self, out):
        w = self.stdout.write
        if "active" in out:
            a = out["active"]
            w(f"Active sampling: {a['replications']} studies per row, {a['items']} items, budget {a['budget']} "
              f"human ratings, pilot {a['pilot']:.0%} of items then {a['batches']} batches, floor {a['floor']}, "
              f"seed {a['seed']}")
            w("corr(u,|err|)  mechanism         active ratings  best uniform PPI++ for same width  saving  "
              "saving if the map were known  coverage active  coverage uniform")
            for r in a["rows"]:
                if not r["reachable"]:
                    w(f"{r['correlation']:5.2f}         {r['mechanism']:<17} not reachable by this mechanism")
                    continue
                flag = "" if r["within_simulated_range"] else " (outside the simulated range)"
                oracle = _pct(r["oracle_saving"]) if "oracle_saving" in r else "   -  "
                w(f"{r['correlation']:5.2f} ({r['realised_correlation']:.2f})  {r['mechanism']:<17} "
                  f"{r['active_ratings']:8.1f}  {r['best_uniform_ratings_same_width']:10.1f}{flag}  "
                  f"{_pct(r['saving'])}  {oracle}  {_pct(r['active_coverage'])}  "
                  f"{_pct(r['uniform_coverage_at_budget'])}")
        if "peeking" in out:
            p = out["peeking"]
            w(f"Peeking: {p['studies']} null studies of {p['ratings']} ratings, checked after every rating from "
              f"the {p['first_look']}th, alpha {p['alpha']}, seed {p['seed']}")
            w(f"  false 'significant': confidence sequence {_pct(p['confidence_sequence'])}, asymptotic CS "
              f"{_pct(p['asymptotic_cs'])}, fixed-sample interval at every look {_pct(p['fixed_sample_every_look'])}"
              f" (once at the end {_pct(p['fixed_sample_once_at_end'])})")
        w(f"{out['date']}, {out['machine']}, {out['seconds']} s")
