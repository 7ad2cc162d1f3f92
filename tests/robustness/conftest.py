"""Property tests load the reproducible Hypothesis profile (see profiles.py)."""

from tests.robustness import profiles  # noqa: F401
