"""One computation of a large report run in a forked child, beside the caller's own work.

The report's sections are CPU work in Python, numpy and pandas: on a thread they mostly wait for
the GIL. A forked child shares the caller's frame copy-on-write (nothing is pickled on the way in)
and sends back only its result, pickled through a pipe that a thread of the caller drains, so the
child exits as soon as it is done. The child never touches the database and always leaves with
`os._exit`: it closes nothing the caller still uses (Django's connections, a web worker's sockets)
and never returns into the caller's code. If the caller dies first, the child's write fails and it
ends. Memory: the two processes share the frame, but each one's own arrays add up; docs/scaling.md
has the figures at ten million ratings.
"""

from __future__ import annotations

import os
import pickle
import threading
import traceback
from typing import Any, Callable


class ChildFailed(RuntimeError):
    """The computation raised in the child (its traceback is the message) or the child died."""


class Beside:
    """`fn()` computed in a forked child from now on; `result()` waits for it and returns it."""

    def __init__(self, fn: Callable[[], Any]):
        read_end, write_end = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:  # the child: whatever happens, it never returns into the caller's code
            try:
                os.close(read_end)
                try:
                    payload = pickle.dumps((True, fn()), protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException:  # noqa: BLE001 - everything goes back to the caller
                    payload = pickle.dumps((False, traceback.format_exc()))
                with os.fdopen(write_end, "wb") as out:
                    out.write(payload)
            finally:
                os._exit(0)  # (a caller gone, its pipe closed, ends the child here too)
        os.close(write_end)
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._drain, args=(read_end,), daemon=True)
        self._reader.start()

    def _drain(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as pipe:
            while chunk := pipe.read(1 << 20):
                self._chunks.append(chunk)

    def result(self) -> Any:
        self._reader.join()
        _, status = os.waitpid(self._pid, 0)
        if not self._chunks:
            raise ChildFailed(f"the child computing beside the report ended without a result ({_how(status)})")
        ok, value = pickle.loads(b"".join(self._chunks))
        if not ok:
            raise ChildFailed(f"the computation beside the report failed:\n{value}")
        return value


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
