"""The result type of every statistic: a value, or None with the reason it is undefined."""

from __future__ import annotations

import math
from typing import Any, NamedTuple


class Stat(NamedTuple):
    """A statistic that may be undefined for the data; `reason` says why when `value` is None."""

    value: float | None
    reason: str | None = None
    ci: tuple[float, float] | None = None

    @classmethod
    def undefined(cls, reason: str) -> Stat:
        return cls(None, reason)

    @classmethod
    def of(cls, value: float, reason_if_nan: str = "undefined for these data",
           ci: tuple[float, float] | None = None) -> Stat:
        """Wrap a float, turning NaN/inf (a 0/0 somewhere) into an explicit undefined result."""
        v = float(value)
        if not math.isfinite(v):
            return cls(None, reason_if_nan)
        return cls(v, None, ci)

    def json(self) -> float | None:
        return self.value


def jsonable(obj: Any) -> Any:
    """Stats become their value (None -> null); NaN/inf never leak into JSON."""
    if isinstance(obj, Stat):
        return jsonable(obj.value)
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # numpy scalar
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
