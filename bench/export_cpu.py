"""CPU seconds of one export: the exporting child process and the PostgreSQL backends on its database.

    python -m bench.export_cpu DATABASE STUDY_SLUG FORMAT

Wall time on the shared 2-core machine moves with the other engineers' load; CPU seconds move far less.
The child is bench_exports' (a fresh process writing the file) and reports the CPU of the export
alone (time.process_time around it, imports left out); the backends' CPU is read from /proc every
20 ms for every `postgres: … DATABASE …` process (a lower bound: the last 20 ms of a backend that
exits may be missed). Prints one line with both, the wall time, peak RSS, sha256 and the load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_exports import CHILD, REPO, _child_env

_TIMED_CHILD = (CHILD.replace("t0 = time.perf_counter()", "c0 = time.process_time(); t0 = time.perf_counter()")
                .replace('"sha256": written.sha256,', '"sha256": written.sha256, "cpu": time.process_time() - c0,'))
if '"cpu"' not in _TIMED_CHILD:
    raise RuntimeError("bench_exports.CHILD changed: update export_cpu's timing hooks")
_TICK = os.sysconf("SC_CLK_TCK")


def backend_cpu(db_name: str) -> dict[str, float]:
    """CPU seconds so far of each PostgreSQL backend connected to db_name, by pid."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if not cmdline.startswith(b"postgres: ") or f" {db_name} ".encode() not in cmdline:
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            found[pid] = (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime
        except OSError:  # the process ended meanwhile
            continue
    return found


def export_cpu(db_name: str, slug: str, fmt: str) -> dict:
    start = backend_cpu(db_name)
    seen = dict(start)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", _TIMED_CHILD, slug, fmt, str(Path(tmp) / f"out.{fmt}")],
                                 env=_child_env(db_name), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        while child.poll() is None:
            seen.update(backend_cpu(db_name))
            time.sleep(0.02)
        out, err = child.communicate()
        wall = time.perf_counter() - t0
    if child.returncode:
        raise RuntimeError(f"export {fmt} failed:\n{err[-3000:]}")
    res = json.loads(out.strip().splitlines()[-1])
    res.update(pg_cpu=sum(cpu - start.get(pid, 0.0) for pid, cpu in seen.items()), wall=wall,
               load=os.getloadavg()[0])
    return res


if __name__ == "__main__":
    db, slug, fmt = sys.argv[1:4]
    r = export_cpu(db, slug, fmt)
    print(f"{fmt} py {r['cpu']:.2f} + pg {r['pg_cpu']:.2f} = {r['cpu'] + r['pg_cpu']:.2f} CPU s;"
          f" export {r['seconds']:.2f} s; rss {r['rss_peak_mb']:.0f} MB; sha256 {r['sha256'][:16]};"
          f" load {r['load']:.2f}")
