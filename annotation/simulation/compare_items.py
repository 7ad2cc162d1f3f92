"""Synthetic items for the comparative presets (compare-pairwise, compare-ranking): one request or
article and an output per system, each output's text from the quality tier its true quality falls in.
items.py registers these beside the seed presets' generators."""

from __future__ import annotations

from annotation.simulation.latent import output_quality

# System name -> effect on quality (z units). Six summarisers, so a tuple of four is a real subset.
SYSTEMS: dict[str, dict[str, float]] = {
    "compare-pairwise": {"gpt-4o": 0.7, "claude-3.5-sonnet": 0.5, "llama-3.1-70b-instruct": 0.0,
                         "mistral-7b-instruct": -0.7},
    "compare-ranking": {"pegasus-large": 0.6, "bart-large-cnn": 0.35, "t5-base": 0.0, "lead-3": -0.1,
                        "gpt-3.5-turbo": 0.25, "textrank": -0.6},
}

_REQUESTS = [
    ("How do I undo my last git commit but keep the changes?",
     "Run `git reset --soft HEAD~1`: the commit is removed and its changes stay staged. Use `git reset HEAD~1` "
     "(mixed) to keep them unstaged instead. If you already pushed, prefer `git revert` so others are not affected.",
     "Use `git reset HEAD~1`, which removes the last commit and keeps your changes in the working tree.",
     "Delete the .git folder and clone the repository again, then copy your files back."),
    ("What is a good way to store passwords in a database?",
     "Never store them in plain text: store a slow, salted hash made with a password-hashing function such as "
     "Argon2id, scrypt or bcrypt, and compare hashes at login. Your framework's built-in hasher does this.",
     "Hash them with a salt before saving, for example with bcrypt.",
     "Encrypt them with AES and keep the key in the same database so you can decrypt them at login."),
    ("Explain the difference between a list and a tuple in Python.",
     "A list is mutable (you can append, remove and change items) and a tuple is immutable. Tuples are hashable "
     "when their items are, so they can be dictionary keys; use them for fixed records and lists for collections "
     "that change.",
     "Lists use square brackets and can change; tuples use parentheses and cannot.",
     "There is no real difference; tuples are just an older syntax for lists."),
    ("Suggest a plan for a three-day visit to Lisbon.",
     "Day 1: Alfama, the castle and a fado evening. Day 2: Belém (the monastery, the tower, pastéis de nata) and "
     "the LX Factory. Day 3: a day trip to Sintra by train, back for dinner in Bairro Alto. Buy a Viva Viagem "
     "card for trams and trains.",
     "See the old town on day 1, Belém on day 2 and Sintra on day 3.",
     "Lisbon is the capital of Portugal and has many museums and restaurants you can visit."),
]

_ARTICLES = [
    ("The city council voted on Tuesday to extend the tram line to the northern suburbs. Construction will "
     "start next spring and cost 240 million euros, two thirds paid by the national government. Opponents "
     "warned of two years of traffic disruption; supporters said 30,000 residents would gain a direct link.",
     "The council approved a 240-million-euro tram extension to the northern suburbs, mostly state-funded, "
     "starting next spring; it will link 30,000 residents despite warnings of two years of disruption.",
     "The council voted to extend the tram line north; construction starts next spring.",
     "The city council met on Tuesday. Trams are popular in many European cities."),
    ("Researchers reported that a new blood test detected early-stage pancreatic cancer in 85% of cases in a "
     "trial of 1,200 patients, with few false alarms. The authors cautioned that larger studies are needed "
     "before the test can be used for screening.",
     "A blood test found early pancreatic cancer in 85% of 1,200 trial patients with few false alarms, but its "
     "authors say larger studies must come before screening use.",
     "A new blood test detected early pancreatic cancer in a trial.",
     "Scientists have cured pancreatic cancer with a new blood test, a trial shows."),
    ("Heavy rain caused the river to burst its banks overnight, flooding 300 homes in the old town. Nobody was "
     "hurt. The mayor declared an emergency and asked the army to help build flood barriers before more rain "
     "expected on Friday.",
     "Overnight flooding hit 300 old-town homes without injuries; the mayor declared an emergency and called in "
     "the army to build barriers before Friday's rain.",
     "A river flooded 300 homes after heavy rain; the mayor declared an emergency.",
     "It rained a lot. The weather will continue on Friday."),
]


def _tier(z: float) -> int:
    return 0 if z > 0.4 else (1 if z > -0.4 else 2)


# Two outputs of one tier would be the same text: later ones get a closing line of their own
# (never the system's name: raters are blind to it).
_CLOSINGS = ["", " Hope this helps.", " Let me know if anything is unclear.", " In short: see above.",
             " That is the gist.", " Those are the key points."]


def _outputs(preset: str, seed: int, item_id: str, texts: tuple[str, str, str]) -> list[dict]:
    out, used = [], {}
    for pos, (system, effect) in enumerate(SYSTEMS[preset].items()):
        base = texts[_tier(output_quality(seed, effect, item_id, pos))]
        n = used[base] = used.get(base, -1) + 1
        out.append({"system": system, "content": base + _CLOSINGS[n % len(_CLOSINGS)], "kind": "markdown"})
    return out


def pairwise_item(seed: int, i: int) -> dict:
    request, *texts = _REQUESTS[i % len(_REQUESTS)]
    item_id = f"cp-{i + 1:03d}"
    return {"id": item_id, "context": f"{request} (request {i + 1})", "context_kind": "text",
            "outputs": _outputs("compare-pairwise", seed, item_id, tuple(texts)), "metadata": {"task": "assistant"}}


def ranking_item(seed: int, i: int) -> dict:
    article, *texts = _ARTICLES[i % len(_ARTICLES)]
    item_id = f"cr-{i + 1:03d}"
    return {"id": item_id, "context": f"{article} (Article {i + 1}.)", "context_kind": "text",
            "outputs": _outputs("compare-ranking", seed, item_id, tuple(texts)), "metadata": {"task": "summary"}}


GENERATORS = {"compare-pairwise": pairwise_item, "compare-ranking": ranking_item}
