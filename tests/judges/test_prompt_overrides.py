"""A prompt override with an unknown key is an error that names the known keys, never silently ignored."""
from __future__ import annotations

import pytest

from judges.config import JudgeConfigError, validate_judge
from judges.prompts import UnknownOverride, build_all_criteria, build_criterion, build_pairwise, known_overrides
from judges.services.engine import output_criteria
from tests.judges.test_prompts import ITEM, RUBRIC, demo, preset


def test_a_misspelt_override_names_the_known_keys():
    with pytest.raises(UnknownOverride) as exc:
        build_all_criteria(RUBRIC, ITEM, 0, overrides={"rol": "You grade."})
    assert str(exc.value) == ("unknown prompt override 'rol' for a generic rubric; known: answer, answer_first_line, "
                              "answer_json, answer_label, bw_role, bw_verdict, compare_item, item, pair_item, pair_role, rank_role, "
                              "rank_verdict, role, verdict")


def test_an_override_of_another_style_is_unknown_for_this_rubric():
    r, items = preset("feedback-000"), demo("feedback-000")
    assert build_all_criteria(r, items[0], 0, overrides={"output_format": "- **Tone**: score"}).text.rstrip() \
        .endswith("- **Tone**: score")
    with pytest.raises(UnknownOverride, match="'json_prompt' for a feedback_000 rubric; known: .*output_format"):
        build_all_criteria(r, items[0], 0, overrides={"json_prompt": "x"})
    r4 = preset("fulltext-004")
    with pytest.raises(UnknownOverride, match="'output_format' for a fulltext_004 rubric; known: .*json_prompt"):
        build_criterion(r4, "logic", demo("fulltext-004")[0], 0, overrides={"output_format": "x"})
    with pytest.raises(UnknownOverride, match="'verdicts'"):
        build_pairwise(RUBRIC, ITEM, 0, 1, overrides={"verdicts": "x"})


def test_a_judge_file_with_an_unknown_override_is_refused_with_the_known_keys():
    with pytest.raises(JudgeConfigError) as exc:
        validate_judge({"name": "j", "backend": "transformers", "model": "tiny", "method": "per_criterion",
                        "prompt_overrides": {"answer_first_lin": "Score first."}})
    assert "prompt_overrides: unknown template name(s) 'answer_first_lin'; known: " in str(exc.value)
    assert "answer_first_line" in str(exc.value) and "json_prompt" in str(exc.value)
    ok = validate_judge({"name": "j", "backend": "transformers", "model": "tiny", "method": "per_criterion",
                         "prompt_overrides": {"answer_first_line": "Score first."}})
    assert ok["prompt_overrides"] == {"answer_first_line": "Score first."}
    assert set(known_overrides()) >= {"base_prompt", "output_format", "example", "label_header", "role"}


def test_a_run_refuses_to_start_with_an_override_its_rubric_never_uses():
    config = {"method": "all_in_one", "prompt_overrides": {"json_prompt": "x"}}
    with pytest.raises(ValueError, match="unknown prompt override 'json_prompt' for a feedback_000 rubric"):
        output_criteria(config, preset("feedback-000"))
    assert output_criteria({"method": "all_in_one", "prompt_overrides": {"base_prompt": "x"}},
                           preset("feedback-000"))
