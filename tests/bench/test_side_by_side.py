"""bench.peers.side_by_side: the ratio is taken against the best peer that ran at that level."""

from bench.peers.side_by_side import ratios


def test_the_ratio_is_against_the_fastest_peer_that_ran():
    level = {"concord": {"rated_items_per_s": 150.0}, "potato": {"rated_items_per_s": 12.0},
             "label_studio": {"rated_items_per_s": 10.0}}
    assert ratios(level) == {"best_peer": "potato", "ratio": 12.5}
    level["potato"] = None  # could not be installed here
    assert ratios(level) == {"best_peer": "label_studio", "ratio": 15.0}


def test_no_ratio_without_a_peer():
    assert ratios({"concord": {"rated_items_per_s": 150.0}, "potato": None}) == {"best_peer": None, "ratio": None}
