"""Hypothesis profiles for the property tests (imported by the conftests of tests/robustness and tests/security).

`ci` (the default) is derandomized, so a run is reproducible and a failure in CI is the
same failure on a laptop, and writes no example database into the working tree.
HYPOTHESIS_PROFILE=explore searches ten times longer with fresh random seeds.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "explore", max_examples=1000, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
