"""The annotator loop's 1,000-rater phase (bench/bench_annotator_loop.py run_thousand): its own
results file, so that `python -m bench annotator_loop_1000` runs it alone.

    python -m bench annotator_loop_1000          # 75 s at a human pace, about 2-3 minutes in all
    python -m bench annotator_loop_1000 --full   # 180 s
    BENCH_1K_ONE_TRIP=1 python -m bench annotator_loop_1000   # one request per item (submit?next=1), as the
                                                             # browser workspace sends it; default: next, then submit
"""

from bench.bench_annotator_loop import run_thousand as run  # noqa: F401  (the bench runner's entry point)
