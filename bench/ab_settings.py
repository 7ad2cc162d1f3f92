"""The project's settings with another session engine, for bench/loop_variants.py's session variant
(BENCH_SESSION_ENGINE names it). Nothing else differs."""

import os

from config.settings import *  # noqa: F403

SESSION_ENGINE = os.environ["BENCH_SESSION_ENGINE"]
