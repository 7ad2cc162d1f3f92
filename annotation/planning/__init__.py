"""The study planner: items, raters and judgements needed for the wanted power (annotation.stats.power),
with inputs entered or estimated from a pilot study's ratings."""
