"""What a reader gets while a worker computes a large study's report (annotation.reports.background
says when). Apart from background, so that the views that catch these import no statistics."""

from __future__ import annotations

import time


class ReportPending(Exception):
    """The report is being computed by a worker."""

    def __init__(self, queued_at: float, expected_s: float):
        super().__init__(f"the report is being computed (about {expected_s:.0f} s in all)")
        self.queued_at = queued_at
        self.expected_s = expected_s

    @property
    def elapsed_s(self) -> float:
        return max(0.0, time.time() - self.queued_at)

    @property
    def share(self) -> float:
        """An estimate, held below 1 until the report is there."""
        return min(0.95, self.elapsed_s / self.expected_s)

    @property
    def retry_after_s(self) -> int:
        return max(2, min(30, int(self.expected_s - self.elapsed_s)))


class ReportFailed(Exception):
    """The worker's last try at this study's report failed; the message says why."""
