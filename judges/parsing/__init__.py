"""Read a verdict out of a judge's answer, from the one place its prompt's output format puts it.

Rules that hold for every parser here (issue 10 §3):
- each criterion is read from where the output format puts it and nowhere else: the first
  line (seed 004), the JSON field (seed 004 evidence, seed 003, generic prompts), the score
  line `- **Name**: 4` (seed 000), the `[[A]]` marker (pairwise), the `[[2 > 1 > 3]]` and
  `[[best: 3, worst: 1]]` markers (ranking, best-worst; the last marker counts). Reasoning text around the
  answer never changes it;
- an echoed template (`score`, `xx`, `true|false`, `<integer from 0 to 4>`), a negated answer
  (`not TP`) or two different values for one criterion -> unparsed;
- unparsed is `ParseResult(value=None, status="unparsed")` with the raw text kept and a
  `detail` saying why; refusals -> status "refusal". Never 0, never the minimum, never a tie.
"""
from judges.parsing.common import (
    LOGPROBS_UNAVAILABLE, OK, REFUSAL, UNPARSED, ParseResult, strip_reasoning_blocks,
)
from judges.parsing.formats import (
    parse_bool_field, parse_first_line_score, parse_int_field, parse_json_score, parse_json_scores, parse_label,
    parse_pairwise, parse_score,
)
from judges.parsing.comparative import parse_best_worst, parse_ranking
from judges.parsing.json_objects import extract_json_objects
from judges.parsing.logprobs import expected_score
from judges.parsing.score_lines import parse_criteria_block

__all__ = [
    "LOGPROBS_UNAVAILABLE", "OK", "REFUSAL", "UNPARSED", "ParseResult", "expected_score", "extract_json_objects",
    "parse_bool_field", "parse_criteria_block", "parse_first_line_score", "parse_int_field", "parse_json_score",
    "parse_json_scores", "parse_label", "parse_pairwise", "parse_ranking", "parse_best_worst", "parse_score", "strip_reasoning_blocks",
]
