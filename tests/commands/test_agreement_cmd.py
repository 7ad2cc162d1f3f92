import json
from io import StringIO

import krippendorff
import numpy as np
import pytest
from django.core.management import CommandError, call_command

CSV = """item,rater,criterion,score
a,ann,clarity,1
a,bob,clarity,2
a,gpt,clarity,2
b,ann,clarity,3
b,bob,clarity,3
b,gpt,clarity,3
c,ann,clarity,2
c,bob,clarity,2
c,gpt,clarity,1
d,ann,clarity,5
d,bob,clarity,4
d,gpt,clarity,4
a,ann,tone,3
a,bob,tone,3
b,ann,tone,3
b,bob,tone,3
"""


def run(path, *args):
    out = StringIO()
    call_command("agreement", str(path), *args, stdout=out)
    return out.getvalue()


def test_json_report(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(CSV)
    rep = json.loads(run(path, "--judge", "gpt", "--json"))
    clarity = rep["criteria"]["clarity"]
    assert clarity["n_items"] == 4 and clarity["n_raters"] == 2 and clarity["n_ratings"] == 8
    ref = krippendorff.alpha(reliability_data=np.array([[1, 3, 2, 5], [2, 3, 2, 4]]), level_of_measurement="interval")
    assert clarity["krippendorff_alpha"]["interval"] == pytest.approx(ref)
    # judge vs human mean [1.5, 3, 2, 4.5]: |2-1.5| + 0 + |1-2| + |4-4.5| over 4
    assert clarity["judges"]["gpt"]["mae"] == pytest.approx(0.5)
    tone = rep["criteria"]["tone"]
    assert tone["krippendorff_alpha"]["nominal"] is None  # all 3s: undefined, null in JSON
    assert tone["icc"]["ICC1"] is None


def test_human_table(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(CSV)
    text = run(path, "--judge", "gpt")
    assert "criterion clarity: 4 items, 2 raters, 8 ratings" in text
    assert "judge gpt" in text


@pytest.mark.parametrize("content, expected", [
    ("item,rater,score\na,r1,1\na,r2,two\n", "row 3, column 'score'"),
    ("item,rater\na,r1\n", "column 'score'"),
    ("item,rater,score\na,,1\n", "row 2, column 'rater'"),
    ("item,rater,score\na,r1,1\na,r1,2\n", "row 3"),
])
def test_bad_csv(tmp_path, content, expected):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(CommandError, match=expected):
        run(path)
