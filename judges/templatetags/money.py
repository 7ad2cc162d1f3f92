"""Money as money: `{{ value|usd }}` gives $0.45, $1,234.50, and two significant figures below a cent
($0.00015), never a float's binary noise ($0.44999999999999996)."""

from __future__ import annotations

import math

from django import template

register = template.Library()


@register.filter
def usd(value) -> str:
    try:
        amount = float(value)
    except (TypeError, ValueError):
        return ""
    if not math.isfinite(amount):
        return ""
    sign, amount = ("−" if amount < 0 else ""), abs(amount)
    if amount == 0:
        return "$0"
    if amount >= 0.01:
        return f"{sign}${amount:,.2f}"
    return f"{sign}${amount:.2g}" if amount >= 1e-4 else f"{sign}${amount:.1e}"
