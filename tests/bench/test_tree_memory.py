"""bench.x10_child.TreeMemory: the memory of a process and the children it forks, summed."""

from __future__ import annotations

import subprocess
import sys

from bench.x10_child import TreeMemory

# 200 MB in the parent, shared with a forked child that touches 200 MB of its own: the tree holds
# about 400 MB, though neither process's own RSS reaches 300 MB.
SCRIPT = """
import os, time
shared = bytearray(200 << 20)
pid = os.fork()
if pid == 0:
    own = bytearray(200 << 20)
    time.sleep(1.5)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_the_peak_counts_a_forked_child_once_and_its_shared_pages_once():
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT])
    with TreeMemory(proc.pid, every=0.05) as tree:
        proc.wait(timeout=30)
    assert proc.returncode == 0
    assert 380 < tree.peak_mb < 560
