"""Synthetic items that look like each seed protocol's data, in the item-upload format.

    items_for(preset, n=20, seed=0) -> list[dict]     # rows as import_items takes them (JSONL)

Each output's text is picked from a quality tier (good / fair / poor) that follows its true
quality (latent.output_quality), so what a reader sees agrees with what the simulated raters
and judges answer. Every context carries its item number, so no two prompts are the same.
"""

from __future__ import annotations

from typing import Callable

from annotation.simulation import agent, compare_items
from annotation.simulation.latent import choose, output_quality, to_label

# System name -> effect on quality (z units): fixed per preset so that system rankings are stable.
SYSTEMS: dict[str, dict[str, float]] = {
    "feedback-000": {"gpt-4o-mini": 0.6, "llama-3.1-8b-instruct": 0.0, "mistral-7b-instruct": -0.6},
    "rrgen-001": {"llama-3.1-8b-instruct": 0.8, "rrgen-lstm": -0.1, "rrgen-transformer": -0.8},
    "codegen-002": {"anthropic/claude-3.5-sonnet": 0.7, "qwen/qwen-2.5-coder-32b": 0.2,
                    "meta-llama/llama-3.2-3b": -0.7},
    "aqua-003": {"gec-system-a": 0.8},  # most suggested edits are real fixes (TP)
    "fulltext-004": {"gpt-4o": 0.6, "llama-3.1-8b-instruct": -0.4},
}
AQUA_LABELS = ["TP", "FP3", "FP2", "FP1"]  # best first


def tier(z: float) -> int:
    """0 good, 1 fair, 2 poor."""
    return 0 if z > 0.4 else (1 if z > -0.4 else 2)


_SIGN_OFFS = ["Kind regards.", "Best wishes.", "All the best.", "With thanks."]


def _distinct(content: str, kind: str, n: int) -> str:
    """Two systems of one item with the same tier would write the same text: vary the n-th copy
    (real systems never agree word for word, and a judge prompt must name one output)."""
    if kind == "html":
        return content.replace("</body>", f"<footer>Version {n + 1}</footer>\n</body>")
    if kind == "code":
        return f"{content}\n# variant {n + 1}\n"
    return f"{content} {_SIGN_OFFS[n % len(_SIGN_OFFS)]}"


def _outputs(preset: str, seed: int, item_id: str, make: Callable[[int, str], tuple[str, str]]) -> list[dict]:
    out, seen = [], set()
    for pos, (system, effect) in enumerate(SYSTEMS[preset].items()):
        content, kind = make(tier(output_quality(seed, effect, item_id, pos)), system)
        n = 0
        while content in seen:
            content, n = _distinct(content, kind, n), n + 1
        seen.add(content)
        out.append({"system": system, "content": content, "kind": kind})
    return out


# ------------------------------------------------------------------------------ seed 000: feedback

_FEEDBACK_TASKS = [
    ("Psychology", "Essay (1,500 words): explain how social learning theory accounts for aggression in adolescents.",
     "Bandura's Bobo doll experiment showed that children imitate aggressive models. Adolescents who see violence "
     "are more likely to be aggressive because they learn it is rewarded. Not everyone who watches violent films "
     "becomes violent, so temperament must matter too.",
     "Theoretical Understanding", "Demonstrates comprehension of relevant theories and their application.",
     "the mechanisms of social learning (attention, retention, reproduction, motivation)"),
    ("Biology", "Lab report: the effect of temperature on the activity of the enzyme catalase.",
     "We measured oxygen production at four temperatures. Activity rose up to body temperature and then fell. "
     "We think the enzyme was denatured at the highest temperature because the graph goes down.",
     "Data Analysis", "Interprets results accurately and links them to the hypothesis.",
     "error bars and repeated trials, and the term optimum temperature"),
    ("History", "Source analysis: the causes of the 1929 stock market crash.",
     "The crash happened because people bought shares with borrowed money. When prices fell they had to sell, "
     "which made prices fall more. The source from the newspaper says everyone was optimistic.",
     "Use of Evidence", "Selects and evaluates sources to support an argument.",
     "the provenance of the newspaper source and a second, contrasting source"),
    ("Computer Science", "Programming assignment: implement and analyse binary search.",
     "My binary search works on sorted lists. I tested it with five examples and it found every number. "
     "It is faster than linear search because it halves the list.",
     "Algorithm Analysis", "Explains correctness and complexity with appropriate precision.",
     "a loop invariant, the O(log n) bound and a test for an empty list"),
    ("Economics", "Short essay: should governments cap rents in growing cities?",
     "Rent caps help poor families pay rent. But landlords may stop repairing flats. Some economists say supply "
     "falls. I think caps are good in the short term.",
     "Argumentation", "Builds a balanced argument using economic reasoning.",
     "the supply response over time and one empirical study"),
]
_STUDENTS = ["Amira", "Ben", "Chen", "Dara", "Eli", "Fatima", "Greta", "Hugo", "Ines", "Jonas", "Kemal", "Lea"]


def _feedback_item(seed: int, i: int) -> dict:
    domain, task, work, criterion, description, missing = _FEEDBACK_TASKS[i % len(_FEEDBACK_TASKS)]
    student = _STUDENTS[(i // len(_FEEDBACK_TASKS) + i) % len(_STUDENTS)]
    item_id = f"fb-{i + 1:03d}"
    context = (f"**Domain:** {domain}\n\n**Task:** {task}\n\n**Student work (excerpt, student {student}, "
               f"submission {i + 1}):**\n\n{work}\n\n**Criterion:** {criterion}\n\n{description}\n\n"
               "**Performance descriptors:**\n- **excellent**: comprehensive and nuanced\n"
               "- **good**: solid, with clear connections to the topic\n- **average**: adequate, with minor gaps")

    def make(t: int, system: str) -> tuple[str, str]:
        texts = [
            f"{student}, you make a clear start: your main point about the task is stated early and supported. "
            f"To reach the next level, add {missing}. Begin by revising the second paragraph, where this fits "
            "most naturally, and then check your conclusion against the criterion. You clearly put effort into "
            "this work, and these changes will make your argument much stronger.",
            f"Good work, {student}. Your answer covers the basics of the task. You could add {missing} to make it "
            "better. Also check your spelling and structure before you hand it in next time.",
            f"The work is too short and does not really answer the task, {student}. Rewrite it. Read the textbook "
            "again, because the main idea is wrong.",
        ]
        return texts[t], "text"

    return {"id": item_id, "context": context, "context_kind": "markdown",
            "outputs": _outputs("feedback-000", seed, item_id, make),
            "metadata": {"domain": domain, "criterion": criterion}}


# ------------------------------------------------------------------------------ seed 001: RRGen

_REVIEWS = [
    ("hotel", 2, "the air conditioning rattled all night", "the sea view was stunning", "room"),
    ("hotel", 4, "check-in took forty minutes", "the breakfast buffet was excellent", "stay"),
    ("restaurant", 5, "the terrace was a little noisy", "the ramen broth was rich and the staff friendly", "dinner"),
    ("restaurant", 1, "we waited an hour for cold pasta", "the bread was fresh", "meal"),
    ("hotel", 3, "the wifi kept dropping", "the bed was very comfortable", "visit"),
    ("restaurant", 4, "the dessert menu was short", "the grilled fish was perfectly cooked", "lunch"),
]
_UNSUITABLE = ["ok", "Booked through an agency, no comment.", "..."]


def _rrgen_item(seed: int, i: int) -> dict:
    item_id = f"rr-{i + 1:03d}"
    domain, stars, bad, good, what = _REVIEWS[i % len(_REVIEWS)]
    # About one review in twelve carries nothing to respond to: raters ignore it (seed 001's NOTE).
    unsuitable = i % 12 == 5
    if unsuitable:
        review = choose(seed, _UNSUITABLE, "review", item_id) + f" (review #{i + 1})"
    else:
        review = (f"Our {what} (review #{i + 1}): {good}, but {bad}. "
                  + ("Would come back." if stars >= 4 else "Not sure we will return."))

    def make(t: int, system: str) -> tuple[str, str]:
        texts = [
            f"Dear guest, thank you for sharing your experience. We are delighted that {good}, and we sincerely "
            f"apologise that {bad}; we have passed this on to the team so it does not happen again. "
            f"We hope to welcome you back for another {what}.",
            f"Thank you for your review. We are glad you enjoyed your {what}. We are sorry about the problems "
            "you had and we hope to see you again.",
            f"thank you for choose our {domain} . we are happy you like the {what} . we hope see you again soon .",
        ]
        return texts[t], "text"

    metadata = {"domain": domain, "review_rating": stars}
    if unsuitable:
        metadata["note"] = "review without semantically important information"
    # Gold ACCEPT/REJECT per response from the truth, so the gold page can grade the judges' decisions.
    gold = {"decision": ["ACCEPT" if output_quality(seed, effect, item_id, pos) > 0 else "REJECT"
                         for pos, effect in enumerate(SYSTEMS["rrgen-001"].values())]}
    return {"id": item_id, "context": review, "context_kind": "text",
            "outputs": _outputs("rrgen-001", seed, item_id, make), "metadata": metadata, "gold": gold}


# ------------------------------------------------------------------------------ seed 002: code generation

_CHARTS = [("stockPriceChart", "daily closing price of ACME stock", "close", "USD",
            [182.4, 185.1, 179.8, 188.6, 191.2]),
           ("rainfallChart", "monthly rainfall in Lisbon", "mm", "mm", [98.0, 82.5, 57.1, 60.3, 31.2]),
           ("visitorsChart", "weekly visitors of the city museum", "visitors", "visitors", [1200, 1350, 980, 1600, 1710])]


def _svg_page(title: str, values: list[float], unit_label: str, t: int) -> str:
    top = max(values)
    bars = []
    for k, v in enumerate(values):
        h = round(200 * v / top)
        label = f'<title>{v} {unit_label}</title>' if t == 0 else ""
        bars.append(f'<rect class="bar" x="{40 + k * 60}" y="{220 - h}" width="40" height="{h}" tabindex="0">'
                    f'{label}</rect>')
    if t == 2:
        return f"<html><body><svg width='400' height='250'>{''.join(bars)}</svg></body></html>"
    style = ("body{font-family:system-ui,sans-serif;margin:24px;color:#1f2933}.bar{fill:#3e7cb1}"
             ".bar:hover,.bar:focus{fill:#f0a202}" if t == 0 else ".bar{fill:steelblue}")
    axis = (f'<text x="0" y="12" font-size="12">{unit_label}</text>'
            '<line x1="35" y1="220" x2="340" y2="220" stroke="#cbd2d9"/>')
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{title}</title>\n<style>{style}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
            f"<svg viewBox=\"0 0 360 240\" role=\"img\" aria-label=\"{title}\">{axis}{''.join(bars)}</svg>\n"
            "</body>\n</html>")


def _python_solution(name: str, t: int) -> str:
    if t == 0:
        return (f"def {name}(rows):\n    \"\"\"Mean and maximum of the value column; rows are (date, value) pairs.\"\"\"\n"
                "    if not rows:\n        raise ValueError(\"no rows\")\n    values = [float(v) for _, v in rows]\n"
                "    return {\"mean\": sum(values) / len(values), \"max\": max(values)}\n")
    if t == 1:
        return (f"def {name}(rows):\n    values = [float(r[1]) for r in rows]\n"
                "    return {\"mean\": sum(values) / len(values), \"max\": max(values)}\n")
    return f"def {name}(rows):\n    m = 0\n    for r in rows:\n        m = m + r[1]\n    return m / 5\n"


def _codegen_item(seed: int, i: int) -> dict:
    item_id = f"cg-{i + 1:03d}"
    name, what, column, unit_label, values = _CHARTS[i % len(_CHARTS)]
    visual = i % 3 != 2
    csv = "\n".join(["date," + column] + [f"2024-06-{3 + k:02d},{v}" for k, v in enumerate(values)])
    title = f"{what[0].upper()}{what[1:]} (challenge {i + 1})"
    if visual:
        context = (f"# Challenge: {name} #{i + 1}\n\n**Requirements:** Produce a bar chart of the {what}. Bars must "
                   f"be labelled, the y axis must show {unit_label}, and the exact value must be available on hover. "
                   f"The page must work offline.\n\n**Input data (CSV):**\n\n```\n{csv}\n```\n\n"
                   "**Expected output:** an HTML page with an SVG bar chart.")
    else:
        context = (f"# Challenge: summarise_{column} #{i + 1}\n\n**Requirements:** Write a Python function that "
                   f"returns the mean and the maximum of the {what}, and fails clearly on empty input.\n\n"
                   f"**Input data (CSV):**\n\n```\n{csv}\n```")

    def make(t: int, system: str) -> tuple[str, str]:
        if visual:
            return _svg_page(title, values, unit_label, t), "html"
        return _python_solution(f"summarise_{column}", t), "code"

    return {"id": item_id, "context": context, "context_kind": "markdown",
            "outputs": _outputs("codegen-002", seed, item_id, make),
            "metadata": {"challenge": name if visual else f"summarise_{column}",
                         "type": "visualization" if visual else "function"}}


# ------------------------------------------------------------------------------ seed 003: AQUA

# (source, original, correction) per label; the source holds the original once.
_EDITS = {
    "TP": [("She go to school every day by bus.", "go", "goes"),
           ("I have lived here since five years.", "since", "for"),
           ("He don't like coffee in the morning.", "don't", "doesn't"),
           ("We discussed about the plan yesterday.", "discussed about", "discussed")],
    "FP3": [("The results were very good, so we continued.", "very good", "excellent"),
            ("I think that the film was long.", "I think that", "I think"),
            ("We began the meeting at noon.", "began", "started")],
    "FP2": [("They have finished the report.", "have finished", "has finished"),
            ("She lives in a small town near the coast.", "in", "at"),
            ("The children are playing outside.", "are playing", "are play")],
    "FP1": [("The company raised its prices last year.", "raised", "lowered"),
            ("My brother is a doctor in Berlin.", "doctor", "patient"),
            ("Please send the invoice by Friday.", "send", "cancel")],
}
_NAMES = ["Anna", "Tom", "Lina", "Omar", "Sara", "Yuki", "Pavel", "Rosa"]


def _aqua_item(seed: int, i: int) -> dict:
    item_id = f"aq-{i + 1:03d}"
    effect = SYSTEMS["aqua-003"]["gec-system-a"]
    label = to_label(output_quality(seed, effect, item_id, 0), AQUA_LABELS)
    source, original, correction = choose(seed, _EDITS[label], "edit", item_id)
    source = f"{source[:-1]}, {_NAMES[i % len(_NAMES)]} said ({i + 1})."
    start = source.index(original)
    end = start + len(original)
    target = source[:start] + correction + source[end:]
    diff = f"{source[:start]}[-{original}-]{{+{correction}+}}{source[end:]}"
    return {"id": item_id, "context": source, "context_kind": "text",
            "outputs": [{"system": "gec-system-a", "content": diff, "kind": "diff"}],
            "metadata": {"lang": "en", "source": source, "target": target,
                         "edit": {"start": start, "end": end, "original": original, "correction": correction}},
            "gold": {"label": label}}


# ------------------------------------------------------------------------------ seed 004: full text

_PROMPTS = [
    "Write a commentary on whether cities should introduce a four-day school week to save money.",
    "Write a commentary on whether social media platforms should verify the age of their users.",
    "Write a commentary on whether a city should make public transport free.",
    "Write a commentary on whether supermarkets should be required to donate unsold food.",
]


def _fulltext_item(seed: int, i: int) -> dict:
    item_id = f"ft-{i + 1:03d}"
    prompt = _PROMPTS[i % len(_PROMPTS)]
    topic = prompt.removeprefix("Write a commentary on whether ").rstrip(".")

    def make(t: int, system: str) -> tuple[str, str]:
        if t == 0:
            text = (f"# On whether {topic}\n\nThe proposal that {topic} deserves a careful answer: the benefit is real, "
                    "but so are the costs, and who bears them matters.\n\n## The case for\n\nSupporters point to "
                    "measured savings and to evidence from pilot programmes reported by national statistics "
                    "offices.\n\n## The case against\n\nCritics show that the burden shifts to families with the "
                    "least room to absorb it, as independent evaluations have found.\n\n## Conclusion\n\nA "
                    "targeted, funded version of the policy keeps most of the benefit at a fraction of the cost.")
        elif t == 1:
            text = (f"# {topic[0].upper()}{topic[1:]}?\n\nMany people discuss whether {topic}. There are good "
                    "arguments on both sides. It could save money and help some people. On the other hand it may "
                    "cause problems for others.\n\nIn conclusion, it depends on the situation.")
        else:
            text = (f"{topic} is something many people talk about. Some think it is good and some think it is bad. "
                    "It saves money. Also people will be happier. But some will have problems, they can find a "
                    "solution. In my opinion it is a good idea because everybody is happy.")
        return f"{text}\n\n(Response to prompt {i + 1}.)", "markdown"

    return {"id": item_id, "context": prompt, "context_kind": "text",
            "outputs": _outputs("fulltext-004", seed, item_id, make), "metadata": {"task": "news commentary"}}


GENERATORS: dict[str, Callable[[int, int], dict]] = {
    "feedback-000": _feedback_item, "rrgen-001": _rrgen_item, "codegen-002": _codegen_item,
    "aqua-003": _aqua_item, "fulltext-004": _fulltext_item,
}
PRESETS = tuple(GENERATORS)  # the seed protocols
# Concord's own comparative presets (pairwise, best-worst, ranking), simulated beside the seeds.
COMPARE_PRESETS = tuple(compare_items.GENERATORS)
GENERATORS.update(compare_items.GENERATORS)
SYSTEMS.update(compare_items.SYSTEMS)
# The agent study (trajectories) has its own rubric, no preset: simulated beside, not among, the presets.
GENERATORS[agent.PRESET] = agent.agent_item
SYSTEMS[agent.PRESET] = agent.SYSTEMS


def items_for(preset: str, n: int = 20, seed: int = 0) -> list[dict]:
    if preset not in GENERATORS:
        raise ValueError(f"unknown preset {preset!r}; the simulation knows {', '.join(GENERATORS)}")
    return [GENERATORS[preset](seed, i) for i in range(n)]


def system_effect(preset: str, system: str) -> float:
    return SYSTEMS[preset].get(system, 0.0)
