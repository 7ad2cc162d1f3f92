"""The planted truth of the simulated crowd study (issue 59 §1): what every rater, item, judge and
participant IS, fixed before anything is driven through the routes, so every figure the researcher
then sees can be compared with it.

Items are the compare-pairwise simulation's (annotation.simulation.compare_items): each output has a
true quality on the z scale (annotation.simulation.latent); its gold helpfulness is that quality on
the 1–7 scale (per output) and its gold preference the outputs' systems best first (per item).

Rater kinds (every one enters through the crowd link and rates through rate/next):

    oracle        no noise, no bias: answers exactly the gold (gold accuracy 1.0)
    accurate      small noise (0.3 z)
    strict        small noise and a bias of −STRICT_SHIFT z (latent.STRICT): scores lower than the truth
    careless      large noise (1.5 z)
    spammer       answers without looking (latent.SPAMMER); fails the attention checks
    first_picker  small noise, but always picks the response shown first as the better one

Participant paths (PATHS): declined consent, consent only, failed the attention checks, failed
training (twice), left midway (returned the task to the panel), finished, returned after a break
(a second visit through the same link in a new browser, once the first was idle for
CROWD_BROWSER_IDLE_MINUTES).
"""

from __future__ import annotations

from dataclasses import dataclass

from annotation.simulation.latent import SPAMMER, STRICT, Knobs

PRESET = "compare-pairwise"
SEED = 59
N_ITEMS = 10
PAY_PER_ITEM = "0.20"
SCREENED_OUT_PAY = "0.40"
REJECT_AFTER_FAILED = 2
TRAINING_PASS_MARK = 0.5
# What each submit reports as time on task: planted, so the sheet's and the progress page's times are known.
SECONDS_PER_ITEM = {"oracle": 30, "accurate": 40, "strict": 45, "careless": 12, "spammer": 3, "first_picker": 20}


@dataclass(frozen=True)
class RaterKind:
    name: str
    noise: float = 0.0
    style: str = ""  # latent.SPAMMER, latent.STRICT or ""
    first_picker: bool = False

    @property
    def knobs(self) -> Knobs:
        # The bias is the style's (STRICT), never a random draw, so it is known to the test.
        return Knobs(noise=self.noise, rater_bias=0.0, position_bias=0.0)


KINDS = {k.name: k for k in (
    RaterKind("oracle"),
    RaterKind("accurate", noise=0.3),
    RaterKind("strict", noise=0.3, style=STRICT),
    RaterKind("careless", noise=1.5),
    RaterKind("spammer", style=SPAMMER),
    RaterKind("first_picker", noise=0.3, first_picker=True),
)}


@dataclass(frozen=True)
class Path:
    """One participant's way through the phases, and what the payment sheet must then say."""

    pid: str  # the panel's participant id
    kind: str | None  # the rater kind who rates (None: never rates)
    steps: str  # declined | consent_only | failed_training | left_midway | finished | break
    decision: str  # the true payment decision
    rule: str  # the phase that decides it (annotation.payments.RULES' key)
    reached: str  # the phase reached, as the sheet words it
    rated: int | None = None  # regular items submitted (None: all)
    checks_failed: int = 0


PATHS = (
    Path("p-declined", None, "declined", "return", "declined", "declined consent", rated=0),
    # agreed, then closed the tab: the study is open and their time not up, so they may still go on
    Path("p-consent-only", None, "consent_only", "pending", "in_progress", "consent given", rated=0),
    Path("p-failed-training", None, "failed_training", "screened_out", "screened_out",
         "training failed 0/2, then 0/2", rated=0),
    Path("p-left-midway", "accurate", "left_midway", "return", "returned", "returned the task after: rated 3 items",
         rated=3),
    Path("p-oracle", "oracle", "finished", "approve", "finished", "finished"),
    Path("p-accurate", "accurate", "finished", "approve", "finished", "finished"),
    Path("p-strict", "strict", "finished", "approve", "finished", "finished"),
    Path("p-careless", "careless", "finished", "approve", "finished", "finished"),
    Path("p-spammer", "spammer", "finished", "reject", "attention", "finished", checks_failed=2),
    Path("p-first-picker", "first_picker", "finished", "approve", "finished", "finished"),
    Path("p-after-break", "accurate", "break", "approve", "finished", "finished"),
)
FINISHERS = [p for p in PATHS if p.steps in ("finished", "break")]
# Every finisher rates every item: one slot more for the participant who leaves after a few.
RATERS_PER_ITEM = len(FINISHERS) + 1
ATTENTION_RATE = 0.25  # of a rater's items; two checks among ten items

# Two attention checks with an obvious answer (the good answer is clearly better); a careful rater passes.
ATTENTION = [
    {"id": "check-1", "context": "What is 2 + 2? (attention check)", "attention_check": True,
     "outputs": [{"system": "check-good", "content": "2 + 2 = 4."},
                 {"system": "check-poor", "content": "Bananas are yellow."}],
     "gold": {"preference": ["check-good", "check-poor"]}},
    {"id": "check-2", "context": "Name the capital of France. (attention check)", "attention_check": True,
     "outputs": [{"system": "check-poor", "content": "I like trains."},
                 {"system": "check-good", "content": "Paris is the capital of France."}],
     "gold": {"preference": ["check-good", "check-poor"]}},
]


@dataclass(frozen=True)
class JudgeTruth:
    """A simulated judge (judges/simulation.py answers from the same latent truth) with a known
    error and known prices; `failing`: its endpoint answers every call with an error."""

    name: str
    model: str
    noise: float
    price_in_per_m: float
    price_out_per_m: float
    failing: bool = False


JUDGES = (
    JudgeTruth("planted-judge-good", "sim-judge-1", noise=0.2, price_in_per_m=0.5, price_out_per_m=2.0),
    JudgeTruth("planted-judge-broken", "sim-judge-2", noise=0.2, price_in_per_m=0.5, price_out_per_m=2.0,
               failing=True),
)
