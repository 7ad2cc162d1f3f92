"""Request parsing: DRF's JSON parser bounded, and one parser for the numbers requests carry."""

import math
import re

from django import forms
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class BoundedJSONParser(JSONParser):
    """DRF's JSONParser turns ValueError into 400 but lets the RecursionError of deeply nested JSON
    (`[[[[...` a few thousand deep) through as a 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None


# --- numbers from requests ------------------------------------------------------------------------
# One parser for every number a request carries (query strings, forms, answers): ASCII digits only
# (Python's int() and float() also take '٣', '３', '²' and '1_000'), finite only (float() takes
# 'inf' and 'nan'), and an error written for people that names the parameter, never Python's text.

_WHOLE = re.compile(r"[+-]?[0-9]+", re.ASCII)
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?", re.ASCII)
MAX_DIGITS = 18  # beyond any count, id or time a request carries; int() of 5,000 digits is slow


class BadNumber(ValueError):
    """A number a request carries that is not one; the message names the parameter and says what to give."""


def _shown(raw: object) -> str:
    text = str(raw)
    return repr(text if len(text) <= 40 else text[:40] + "…")


def whole_number(raw: object) -> int | None:
    """`raw` as an int if it is written in ASCII digits (an optional sign), else None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    text = raw.strip() if isinstance(raw, str) else ""
    if not _WHOLE.fullmatch(text) or len(text) > MAX_DIGITS:
        return None
    return int(text)


def parse_int(raw: object, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = whole_number(raw)
    if value is None:
        raise BadNumber(f"{name}: give a whole number, not {_shown(raw)}")
    _check_range(value, name, minimum, maximum)
    return value


def parse_number(raw: object, name: str, *, minimum: float | None = None, maximum: float | None = None,
                 positive: bool = False, finite: bool = True) -> float:
    """A finite number written in ASCII (`0.5`, `-2`, `1e-3`); BadNumber naming `name` otherwise.
    `finite=False` lets a number too large for a float through as ±inf (never 'inf' or 'nan' as words),
    for a caller whose own range check then says what is allowed."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        value = float(raw)
    else:
        text = raw.strip() if isinstance(raw, str) else ""
        if not _NUMBER.fullmatch(text) or len(text) > 40:
            raise BadNumber(f"{name}: give a number such as 0.5, not {_shown(raw)}")
        value = float(text)
    if finite and not math.isfinite(value):
        raise BadNumber(f"{name}: give a finite number, not {_shown(raw)}")
    if positive and not value > 0:
        raise BadNumber(f"{name}: give a number above 0, not {_shown(raw)}")
    _check_range(value, name, minimum, maximum)
    return value


def _check_range(value: float, name: str, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum or maximum is not None and value > maximum:
        low = "" if minimum is None else f"from {minimum:g} "
        high = "" if maximum is None else f"to {maximum:g}"
        raise BadNumber(f"{name}: give a number {low}{high}".rstrip() + f", not {value:g}")


class _AsciiField:
    """Django's number fields read through float()/int(), which take '٣', '３' and '1_0': refused here as
    the field's own 'invalid' error, before Django reads the value."""

    pattern = _NUMBER

    def to_python(self, value):
        text = value.strip() if isinstance(value, str) else None
        if text and (not self.pattern.fullmatch(text) or len(text) > 40):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


class NumberField(_AsciiField, forms.FloatField):
    """A form's number: ASCII, finite (Django's FloatField refuses inf and nan itself)."""


class WholeNumberField(_AsciiField, forms.IntegerField):
    """A form's whole number, in ASCII digits ('5.0' read as 5, as Django does)."""

    pattern = re.compile(r"[+-]?[0-9]+(?:\.0*)?", re.ASCII)


class _AsciiApiField:
    """DRF's FloatField and IntegerField read a JSON string through float()/int() as well ('٣' is 3)."""

    pattern = _NUMBER

    def to_internal_value(self, data):
        if isinstance(data, str) and (not self.pattern.fullmatch(data.strip()) or len(data) > 40):
            self.fail("invalid")
        return super().to_internal_value(data)


class ApiNumberField(_AsciiApiField, serializers.FloatField):
    """An API's number: ASCII when sent as a string, finite (DRF refuses inf and nan itself)."""


class ApiWholeNumberField(_AsciiApiField, serializers.IntegerField):
    """An API's whole number: ASCII digits when sent as a string."""

    pattern = WholeNumberField.pattern
