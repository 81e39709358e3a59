"""Generated notes on claims: what an equivalence claim's seeds rule out (`comparisons.equivalence_note`)."""
from mone.evidence import claims, comparisons, stats


def test_equivalence_note_states_what_the_seeds_rule_out_and_what_deciding_needs():
  c = claims.trained("x.matches", "matches", "paper", {0: 80.0, 1: 83.0, 2: 81.0}, {0: 81.0, 1: 82.0, 2: 82.5},
                     relation="matches", tolerance=1.0)
  note = comparisons.equivalence_note(c, seeds=5)
  low, high = c["ci95"]
  assert f"more than {-low:.1f} points below" in note and f"more than {high:.1f} above" in note
  assert "half-width under" in note and "at 5 seeds" in note
  own = comparisons.equivalence_note(c)  # by default, the seeds the claim was measured at
  assert "at 3 seeds a paired standard deviation under" in own and "at 5 seeds" not in own
  far = claims.trained("y", "matches", "p", {0: 70.0, 1: 73.0, 2: 71.0}, {0: 81.0, 1: 82.0, 2: 82.5}, relation="matches", tolerance=1.0)
  assert "no number of seeds" in comparisons.equivalence_note(far)
  beats = claims.trained("z", "beats", "p", {0: 1.0, 1: 2.0, 2: 3.0}, relation="beats", tolerance=0.0)
  assert comparisons.equivalence_note(beats) == ""


def test_secondary_router_note_gives_other_capacities_with_their_ci_but_not_the_tested_one():
  learned = {0.2: {0: 80.0, 1: 82.0, 2: 81.0}, 0.3: {0: 85.0, 1: 86.0, 2: 84.0}}
  random = {0.2: {0: 70.0, 1: 75.0, 2: 72.0}, 0.3: {0: 75.6, 1: 75.6, 2: 77.7}}
  note = comparisons.secondary_router_note(learned, random, 0.2)
  mean, low, high = stats.paired_ci([9.4, 10.4, 6.3])
  assert note.startswith("Secondary, not the pre-set test") and "e_c = 0.2" not in note
  assert f"{mean:+.1f} points, 95% CI [{low:+.1f}, {high:+.1f}] over 3 seeds" in note
  assert comparisons.secondary_router_note({0.2: {0: 1.0}}, {0.2: {0: 0.0}}, 0.2) == ""


def test_sign_note_only_where_every_seed_points_one_way():
  up = claims.trained("a", "no drop", "p", {0: 80.0, 1: 79.0, 2: 78.0}, {0: 70.45, 1: 72.7, 2: 74.8}, relation="no_worse", tolerance=1.0)
  assert comparisons.sign_note(up, "the dense ViViT") == "MoNE is above the dense ViViT at every seed (+9.55, +6.30, +3.20 points)."
  mixed = claims.trained("b", "no drop", "p", {0: 80.0, 1: 70.0}, {0: 75.0, 1: 75.0}, relation="no_worse", tolerance=1.0)
  assert comparisons.sign_note(mixed, "x") == ""
