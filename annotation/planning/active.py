"""The plan page's active-sampling prediction: what the active_inference policy should save on this
study, from the judges' scores (and the human ratings so far, as a pilot) before humans rate on.

The judges' scores come through settings.STUDY_JURY (the judges app's study_jury), so the human
side reads no judge table itself.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from annotation.models import Study
from annotation.services.active_inference import active_prediction


def active_plan(study: Study) -> dict[str, Any] | None:
    """active_prediction for the study's jury; None when no app provides judges' scores."""
    reader = getattr(settings, "STUDY_JURY", "")
    if not reader:
        return None
    return active_prediction(study=study, jury=import_string(reader)(study))
