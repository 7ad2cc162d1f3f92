"""Demo data for `make run`: one simulated study per seed preset and per comparative preset, with
accounts to try it, and a study in German with Arabic and Hebrew items (annotation.demo_languages).

Each demo study is a simulated study (annotation.simulation): synthetic items, three simulated
raters who rate every item through the workspace's services (in a rated, not comparative, study two
more: one who answers at random and one strict by far), and room for the demo annotators to rate
every item too. `judges_hook` (set by the load_demo command, which may import the judges
app) adds judge runs and a release, so every report page opens full.

Idempotent: a study that exists is left as it is. Demo passwords are for a local machine only;
set CONCORD_DEMO_PASSWORD to choose one password for every demo account.
"""

from __future__ import annotations

from typing import Callable

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.demo_accounts import ACCOUNTS, ANNOTATORS, demo_account_rows, demo_password
from annotation.demo_languages import SLUG as LANGUAGES_SLUG
from annotation.demo_languages import demo_languages_install
from annotation.demo_policies import demo_policies_install
from annotation.demo_traffic import demo_traffic_install
from annotation.demo_progress import demo_progress_done, demo_progress_end, demo_progress_start
from annotation.models import Study, StudyMember
from annotation.services.studies import study_members_add
from annotation.simulation.agent import PRESET as AGENT_PRESET
from annotation.simulation.agent_study import agent_study_create
from annotation.simulation.items import COMPARE_PRESETS, PRESETS
from annotation.simulation.latent import SPAMMER, STRICT, Knobs
from annotation.simulation.study import simulated_study_create
from rubrics.loader import load_preset

N_ITEMS = 12
N_SIM_RATERS = 3
# Two more simulated raters in each rated (not comparative) study, as a crowd panel has them: one who
# answers at random and one who is strict by far; the report's rater models find both.
STYLED_RATERS = {f"rater-{N_SIM_RATERS + 1}": SPAMMER, f"rater-{N_SIM_RATERS + 2}": STRICT}
N_UNRATED = 4  # items added after the simulated raters: only the judges score them (PPI)
# A comparative study shows each rater a pair or a tuple of an item's outputs: more items, so that
# every pair of systems is compared often enough for Bradley–Terry intervals worth a look.
N_COMPARE_ITEMS = 30
AGENT_SLUG = "demo-agent-trajectories"
N_AGENT_ITEMS = 10
# Moderate noise, a lenient and a harsh rater, a small order effect and a few broken judge answers:
# enough for every report section to have something to show.
KNOBS = Knobs(noise=0.5, rater_bias=0.3, position_bias=0.3, malformed=0.05)
# The demo's judges: steadier than one rater (as good judges are), a few answers still malformed.
JUDGE_KNOBS = Knobs(noise=0.3, rater_bias=0.2, malformed=0.05)


# The demo's crowd study: a training phase first (the demo annotators meet it too) and a Prolific link.
CROWD_PRESET = "compare-pairwise"
TRAINING = [
    {"id": "training-1", "context": "How do I undo my last commit in git but keep the changes?",
     "outputs": [{"system": "trainer-good", "content": "Run `git reset --soft HEAD~1`: the commit goes, your "
                                                       "changes stay staged."},
                 {"system": "trainer-poor", "content": "Git keeps a history of commits."}],
     "gold": {"preference": ["trainer-good", "trainer-poor"]},
     "explanation": "Response 1 gives the exact command and says what it keeps; Response 2 is true but does "
                    "not answer the question. A clear difference: Response 1 is clearly better."},
    {"id": "training-2", "context": "Summarise in one sentence: the meeting moved from Monday to Wednesday at 10.",
     "outputs": [{"system": "trainer-poor", "content": "There is a meeting."},
                 {"system": "trainer-good", "content": "The meeting is now on Wednesday at 10 instead of Monday."}],
     "gold": {"preference": ["trainer-good", "trainer-poor"]},
     "explanation": "Response 2 keeps both facts that changed (the day and the time); Response 1 drops them."},
]


# The crowd study's participant phases (annotation.questionnaires): consent, a questionnaire,
# instructions with the attention policy and a comprehension check, a closing question.
CROWD_PHASES = {
    "consent": {"text": "## Taking part\n\nYou will compare pairs of answers from AI assistants for about 15 "
                        "minutes. We keep your ratings and answers under your panel id only; you may stop at any "
                        "time by returning the study. Do you agree to take part?",
                "return_code": "NOCONSENT"},
    "pre_questionnaire": {"title": "About you", "questions": [
        {"key": "native_english", "text": "Is English your first language?", "kind": "single", "options": ["yes", "no"]},
        {"key": "ai_use", "text": "How often do you use AI assistants?", "kind": "likert", "min": 1, "max": 5,
         "labels": {"1": "never", "3": "weekly", "5": "daily"}},
        {"key": "age", "text": "Your age", "kind": "number", "min": 18, "max": 100, "integer": True, "required": False},
    ]},
    "instructions": {
        "text": "Read the request, then both answers in full. Score each answer's helpfulness, then say which is "
                "better and how clearly. Choose **Tie** only when you cannot prefer either. Length is not quality.",
        "check": [{"key": "length", "text": "Is the longer answer the better one?", "kind": "single",
                   "options": ["yes", "not necessarily"], "correct": "not necessarily"}]},
    "post_questionnaire": {"questions": [
        {"key": "difficulty", "text": "How hard was it to choose?", "kind": "likert", "min": 1, "max": 5,
         "labels": {"1": "very easy", "5": "very hard"}},
        {"key": "comments", "text": "Anything you want to tell us?", "kind": "text", "required": False}]},
    "attention_policy": {"reject_after_failed": 2},
    "screened_out": {"payment": "0.40", "code": "SCREENOUT"},
    "completion": {"text": "Thank you for taking part."},
}


def _simulated_answers(study: Study, raters) -> None:
    """The simulated raters took part as the crowd's participants do: consent, the questionnaires and
    the instructions' check, so the report splits agreement and system scores by their answers."""
    from annotation.models import PhaseRecord
    from annotation.questionnaires import answers_clean

    for k, rater in enumerate(raters):
        given = {"pre": {"native_english": "no" if k % 2 else "yes", "ai_use": 2 + 2 * (k % 2), "age": 24 + 9 * k},
                 "instructions": {"length": "not necessarily"}, "post": {"difficulty": 2 + k % 3}}
        questions = {"pre": CROWD_PHASES["pre_questionnaire"]["questions"],
                     "instructions": CROWD_PHASES["instructions"]["check"],
                     "post": CROWD_PHASES["post_questionnaire"]["questions"]}
        PhaseRecord.objects.create(study=study, rater=rater, phase=PhaseRecord.Phase.CONSENT,
                                   outcome=PhaseRecord.Outcome.AGREED, answers={})
        for phase, answers in given.items():
            PhaseRecord.objects.create(study=study, rater=rater, phase=phase, outcome=PhaseRecord.Outcome.ANSWERED,
                                       answers=answers_clean(questions[phase], answers))


def _training_and_crowd(study: Study, admin) -> None:
    import json

    from annotation.services.crowd import crowd_link_create
    from annotation.services.items import items_import

    rows = [{**row, "training": True} for row in TRAINING]
    items_import(study=study, text="".join(json.dumps(r) + "\n" for r in rows), filename="training.jsonl")
    study.training_pass_mark = 0.5
    study.phases = CROWD_PHASES
    study.save(update_fields=["training_pass_mark", "phases"])
    crowd_link_create(study=study, user=admin, provider="prolific", completion_code="DEMO2026",
                      items_per_participant=5, time_limit_minutes=30)


def demo_simulation(preset: str, seed: int) -> dict:
    """What a demo study's simulation is made of (simulated_study_create's arguments but the names): the
    same on every machine, since the simulation depends on nothing else (annotation.simulation.raters)."""
    styles = {} if preset in COMPARE_PRESETS else STYLED_RATERS
    return {"preset": preset, "seed": seed, "n_items": N_COMPARE_ITEMS if preset in COMPARE_PRESETS else N_ITEMS,
            "n_raters": N_SIM_RATERS + len(styles), "knobs": KNOBS, "styles": styles,
            "raters_per_item": N_SIM_RATERS + len(styles) + len(ANNOTATORS), "unrated_items": N_UNRATED}


@transaction.atomic
def demo_accounts() -> dict[str, object]:
    users = {}
    for username, role in ACCOUNTS.items():
        user, created = get_user_model().objects.get_or_create(username=username)
        if created:
            user.set_password(demo_password(username))
            user.is_staff = user.is_superuser = role == "admin"
            user.save()
        users[username] = user
    return users


def demo_install(judges_hook: Callable[[Study, str, int], None] | None = None) -> list[tuple[str, str, str]]:
    """Create demo accounts and studies when missing; return (username, password, role) rows.

    judges_hook(study, preset, seed) runs after a study's ratings (judge runs, a release)."""
    users = demo_accounts()
    presets = PRESETS + COMPARE_PRESETS
    missing = [f"demo-{p}" for p in presets if not Study.objects.filter(slug=f"demo-{p}").exists()]
    missing += [slug for slug in (AGENT_SLUG, LANGUAGES_SLUG) if not Study.objects.filter(slug=slug).exists()]
    demo_progress_start(missing)
    try:
        _demo_studies(users, presets, judges_hook)
    finally:
        demo_progress_end()
    return demo_account_rows()


def _demo_studies(users, presets, judges_hook) -> None:
    for seed, preset in enumerate(presets):
        slug = f"demo-{preset}"
        if Study.objects.filter(slug=slug).exists():
            continue
        sim = simulated_study_create(slug=slug, admin=users["admin"], rater_prefix="demo-rater",
                                     name=f"Demo: {load_preset(preset)['name']}", **demo_simulation(preset, seed))
        study_members_add(study=sim.study, usernames=ANNOTATORS, role=StudyMember.Role.ANNOTATOR)
        study_members_add(study=sim.study, usernames=["researcher"], role=StudyMember.Role.RESEARCHER)
        if preset == CROWD_PRESET:
            _training_and_crowd(sim.study, users["admin"])
            _simulated_answers(sim.study, sim.raters)
        if judges_hook is not None:
            judges_hook(sim.study, preset, seed)
        demo_progress_done(slug)
    if not Study.objects.filter(slug=AGENT_SLUG).exists():
        # A tool-using assistant's trajectories, rated per run and per step, by the simulated raters and judges.
        seed = len(PRESETS + COMPARE_PRESETS)
        sim = agent_study_create(slug=AGENT_SLUG, admin=users["admin"], n_items=N_AGENT_ITEMS, n_raters=N_SIM_RATERS,
                                 seed=seed, knobs=KNOBS, rater_prefix="demo-rater",
                                 raters_per_item=N_SIM_RATERS + len(ANNOTATORS))
        study_members_add(study=sim.study, usernames=ANNOTATORS, role=StudyMember.Role.ANNOTATOR)
        study_members_add(study=sim.study, usernames=["researcher"], role=StudyMember.Role.RESEARCHER)
        if judges_hook is not None:
            judges_hook(sim.study, AGENT_PRESET, seed)
        demo_progress_done(AGENT_SLUG)
    demo_languages_install(rubric_version=Study.objects.get(slug="demo-rrgen-001").rubric_version,
                           admin=users["admin"], annotators=ANNOTATORS, researchers=["researcher"])
    demo_policies_install(admin=users["admin"], annotators=ANNOTATORS, researchers=["researcher"])
    demo_traffic_install(admin=users["admin"], annotators=ANNOTATORS, researchers=["researcher"])
    from annotation.demo_participants import demo_participant_erasure

    demo_participant_erasure(users["admin"], knobs=KNOBS)
    demo_progress_done(LANGUAGES_SLUG)
