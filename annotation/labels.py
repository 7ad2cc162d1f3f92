"""The words of verdicts and states, one vocabulary for every place that shows them: the report's page,
its JSON, CSV and paper kit, the command line and the Python client read these, never their own.

A code is what the JSON and CSV carry and what the page prints; `css_class` turns it into a class name.
"""

from __future__ import annotations

# A criterion's reliability against the acceptance threshold (annotation.reports.summary.verdict).
RELIABLE = "reliable"  # the whole interval is at or above the threshold
NOT_RELIABLE = "not reliable"  # the whole interval is below it
UNCERTAIN = "uncertain"  # the interval reaches across it
UNDEFINED = "undefined"  # no estimate on these data
RELIABILITY_VERDICTS = (RELIABLE, NOT_RELIABLE, UNCERTAIN, UNDEFINED)

# A fitted model's state (rater models: annotation.reports.rater_models).
CONVERGED = "converged"
NOT_CONVERGED = "not converged"


def css_class(label: str) -> str:
    """'not reliable' -> 'not-reliable' (the page's class for a verdict)."""
    return label.replace(" ", "-")
