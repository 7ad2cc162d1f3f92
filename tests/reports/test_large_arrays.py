"""annotation.reports.large_arrays, in fresh interpreters (the allocator's state is the process's):
inside it, arrays of megabytes allocated and freed again and again reuse the same pages instead
of new ones the kernel must zero; leaving it gives the freed memory back to the system."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="tunes glibc's malloc only")

ROUNDS = r"""
import json, resource, sys
import numpy as np
from annotation.reports.large_arrays import large_arrays

def rounds():
    # as a report does: a few arrays of 8 to 24 MB at once, freed, then the next section's
    for r in range(12):
        held = [np.ones((8 + 4 * (k % 5)) << 17) for k in range(10)]  # (x 8 bytes)
        del held

def columns():
    # columns of ten million values (80 MB: above glibc's largest mmap threshold), two at a time
    for r in range(6):
        held = [np.ones(10_000_000) for k in range(2)]
        del held

def faults(run):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    run()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

def inside(run):
    with large_arrays():
        return faults(run)

mode, work = sys.argv[1], {"rounds": rounds, "columns": columns}[sys.argv[2]]
out = {"faults": faults(work) if mode == "default" else inside(work)}
out["rss_after_mb"] = rss_mb()
print(json.dumps(out))
"""


def _run(mode: str, work: str = "rounds") -> dict:
    proc = subprocess.run([sys.executable, "-c", ROUNDS, mode, work], capture_output=True, text=True, timeout=120,
                          env={"NUMPY_MADVISE_HUGEPAGE": "0", "PATH": "/usr/bin:/bin"}, cwd=str(_repo()))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _repo():
    from pathlib import Path

    return Path(__file__).resolve().parents[2]


def test_arrays_freed_and_allocated_again_reuse_their_pages():
    default, tuned = _run("default"), _run("inside")
    # about 1.6 GB is allocated in all (400,000 pages of 4 KB): by default most of it is faulted in anew
    assert default["faults"] > 150_000, default
    assert tuned["faults"] < default["faults"] / 4, (tuned, default)


def test_columns_above_the_largest_mmap_threshold_reuse_their_pages_too():
    default, tuned = _run("default", "columns"), _run("inside", "columns")
    # 12 columns of 80 MB (about 235,000 pages): by default each is mapped and faulted in anew
    assert default["faults"] > 200_000, default
    assert tuned["faults"] < default["faults"] / 4, (tuned, default)
    assert tuned["rss_after_mb"] < 150, tuned  # and leaving gives them back


def test_leaving_gives_the_freed_memory_back():
    tuned = _run("inside")
    assert tuned["rss_after_mb"] < 150, tuned  # the rounds held up to 200 MB at once
