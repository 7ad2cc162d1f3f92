import json

from django.core.management.base import CommandError

from annotation.stats.active_pairs import ActivePairsPolicy, simulate_active_pairs
from annotation.stats.adaptive_redundancy import AdaptivePolicy, simulate_adaptive_redundancy
from config.commands import ConcordCommand


class Command(ConcordCommand):
    help = ("Run a sampling policy against planted truth and print its savings against the uniform design in the "
            "same run (issue 58 §2, §3). adaptive_redundancy: a planted crowd with spammers, Dawid–Skene accuracy "
            "of a fixed number of labels per item against the policy's labels per item. active_pairs: a planted "
            "ranking, the comparisons random pairs and the policy need for a mean Spearman of --goal. No database.")
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("policy", choices=["adaptive_redundancy", "active_pairs"])
        parser.add_argument("--seeds", type=int, default=10, help="replications, seeds 0..N-1 (default 10)")
        parser.add_argument("--min-raters", type=int, default=2)
        parser.add_argument("--max-raters", type=int, default=9)
        parser.add_argument("--target", type=float, default=0.83, help="posterior an item's answer needs")
        parser.add_argument("--fixed", type=int, default=5, help="labels per item of the uniform design")
        parser.add_argument("--items", type=int, default=1000)
        parser.add_argument("--raters", type=int, default=40)
        parser.add_argument("--spammers", type=int, default=8)
        parser.add_argument("--random-share", type=float, default=0.2)
        parser.add_argument("--systems", type=int, default=12)
        parser.add_argument("--spread", type=float, default=4.0, help="logits between the best and worst system")
        parser.add_argument("--budget", type=int, default=2000)
        parser.add_argument("--goal", type=float, default=0.99)
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, *args, policy: str, seeds: int, json: bool = False, **o):
        if seeds < 1:
            raise CommandError("--seeds: at least 1")
        try:
            if policy == "adaptive_redundancy":
                result = simulate_adaptive_redundancy(
                    policy=AdaptivePolicy(o["min_raters"], o["max_raters"], o["target"]), fixed=o["fixed"],
                    n_items=o["items"], n_raters=o["raters"], spammers=o["spammers"], accuracy=(0.65, 0.95),
                    seeds=range(seeds))
            else:
                result = simulate_active_pairs(policy=ActivePairsPolicy(o["random_share"], batch=5),
                                               n_systems=o["systems"], spread=o["spread"], budget=o["budget"],
                                               step=50, seeds=range(seeds), goal=o["goal"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if json:
            self.stdout.write(_dumps(result))
        elif policy == "adaptive_redundancy":
            self.stdout.write(
                f"{len(result['seeds'])} seeds, {result['n_items']} items, {result['n_raters']} raters "
                f"({result['spammers']} spammers, {result['random_raters']} random)\n"
                f"  uniform  {result['fixed']} labels an item: accuracy {result['fixed_accuracy']:.4f}\n"
                f"  adaptive {result['adaptive_mean_labels']:.2f} labels an item: accuracy "
                f"{result['adaptive_accuracy']:.4f}\n"
                f"  saving {result['saving']:.0%} of the labels")
        else:
            def needed(n):
                return f"{n} comparisons" if n else f"not within {o['budget']}"
            ratio = f"{result['ratio']:.0%} of the random pairs' comparisons" if result["ratio"] else "no ratio"
            self.stdout.write(
                f"{len(result['seeds'])} seeds, {result['n_systems']} systems over {result['spread']:g} logits; "
                f"mean Spearman {result['goal']} from\n  random pairs {needed(result['uniform_needed'])}\n"
                f"  active pairs {needed(result['active_needed'])} ({ratio})")


def _dumps(result) -> str:
    return json.dumps(result, indent=2)
