"""The accuracy claims of Figures 3 and 4, built from a chapter's curves and seed study.

A curve is a list of points (`analysis.points`: 'gflops', 'accuracy_pct', 'e_c', 'learned');
`curves[key, label]` holds one per model size or task (key) and model (label). A seed study is
`analysis.seed_study`'s dict. Where a study gives several seeds of both arms, a claim is decided
from them; otherwise from the figure's single run (`seed`), which `mone.chapters.claims` calls
inconclusive.
"""
import numpy as np

from mone.chapters import claims


def _arm(study: dict, label: str, point: dict, seed: int) -> dict:
  """{seed: accuracy} of one arm: the study's seeds where it has them, else the figure's run."""
  if label in study:
    return dict(zip(study[label]["seeds"], study[label]["accuracy_pct"]))
  return {seed: point["accuracy_pct"]}


def beats_nested(claim_id: str, text: str, paper: str, mone: list, nested: list, name: str, seed: int,
                 learned: bool) -> dict:
  """MoNE against the curve of nested sub-models `name` (MatViT, MatViViT) at MoNE's cheapest
  point inside that curve's FLOPs range, the nested accuracy interpolated there (one seed)."""
  inside = [p for p in sorted(mone, key=lambda p: p["gflops"]) if np.isfinite(claims.at_flops(nested, p["gflops"]))]
  if not inside:
    return claims.not_testable(claim_id, text, paper, "trained", f"no MoNE point inside {name}'s FLOPs range")
  p = inside[0]
  return claims.trained(claim_id, text, paper, {seed: p["accuracy_pct"] - claims.at_flops(nested, p["gflops"])},
                        relation="beats", tolerance=0.0, learned=learned, note=f"at e_c = {p['e_c']}")


def figure3(curves: dict, variant: str, seed_study: dict, seed: int, tolerance: float) -> list[dict]:
  """Figure 3's claims on the smallest model `variant`: MoNE at e_c = 0.4 matches the dense ViT
  (over the seed study's seeds), with about 2x fewer FLOPs; MoNE beats MatViT and MoD at equal
  FLOPs; isoFLOPs training helps at the lowest e_c (if trained)."""
  vit, mone, matvit, mod = (curves[variant, k] for k in ("ViT", "MoNE", "MatViT", "MoD"))
  vit, mod = vit[0], mod[0]
  m04 = next(p for p in mone if p["e_c"] == 0.4)
  learned = all(p["learned"] is not False for pts in curves.values() for p in pts)
  out = [
      claims.trained("fig3.mone_matches_vit", f"MoNE at e_c = 0.4 matches the dense ViT's accuracy (within {tolerance:g} point)",
                     "comparable accuracy (S/16: 2x fewer FLOPs)", _arm(seed_study, "MoNE e_c=0.4", m04, seed),
                     _arm(seed_study, "ViT", vit, seed), relation="matches", tolerance=tolerance, learned=learned),
      claims.arithmetic("fig3.flops_reduction", "MoNE at e_c = 0.4 needs about 2x fewer inference FLOPs than the dense ViT (at least 1.8x)",
                        "around 2x", vit["gflops"] / m04["gflops"], at_least=1.8, unit="x"),
      beats_nested("fig3.mone_beats_matvit", "At its cheapest point inside MatViT's curve, MoNE is more accurate than MatViT at the same FLOPs (interpolated)",
                   "much better than MatViT's nested models at low FLOPs", mone, matvit, "MatViT", seed, learned)]
  text, paper = "At MoD's FLOPs, MoNE's curve (interpolated) is more accurate than MoD", "much better than MoD"
  at_mod = claims.at_flops(mone, mod["gflops"])
  out.append(claims.trained("fig3.mone_beats_mod", text, paper, {seed: at_mod - mod["accuracy_pct"]}, relation="beats",
                            tolerance=0.0, learned=learned) if np.isfinite(at_mod) else
             claims.not_testable("fig3.mone_beats_mod", text, paper, "trained", "MoD's FLOPs lie outside MoNE's curve"))
  if (variant, "MoNE-isoFLOPs") in curves:
    iso = curves[variant, "MoNE-isoFLOPs"][0]
    plain = next(p for p in mone if p["e_c"] == iso["e_c"])
    out.append(claims.trained("fig3.iso_flops_helps", f"isoFLOPs training improves MoNE at the lowest e_c ({iso['e_c']})",
                              "improves, most at low FLOPs", {seed: iso["accuracy_pct"]}, {seed: plain["accuracy_pct"]},
                              relation="beats", tolerance=0.0, learned=learned))
  return out


def figure4(curves: dict, task: str, paper_name: str, seed_study: dict, seed: int, tolerance: float,
            min_reduction: float) -> list[dict]:
  """Figure 4's claims on one video task: MoNE at e_c = 0.4 shows no accuracy drop against the
  dense ViViT (over the study's seeds, keyed 'ViViT' and 'MoNE e_c=0.4'), with 2x fewer FLOPs
  per clip, and beats MatViViT at equal FLOPs. A run stuck on the loss plateau (in the curves or
  the study) makes the trained claims inconclusive."""
  vit, mone, matvivit = curves[task, "ViViT"][0], curves[task, "MoNE"], curves[task, "MatViViT"]
  m04 = next(p for p in mone if p["e_c"] == 0.4)
  learned = not any(p["learned"] is False for (t, _), pts in curves.items() if t == task for p in pts) and not any(
      s is None for r in seed_study.values() for s in r.get("left_plateau_at_step", ()))
  return [
      claims.trained(f"fig4.{task}.mone_no_drop", f"{task} task (for {paper_name}): MoNE at e_c = 0.4 is at most {tolerance:g} point "
                     "less accurate than the dense ViViT", "no drop at 2-3x fewer FLOPs (SSv2: 64.6% vs 64.4%)",
                     _arm(seed_study, "MoNE e_c=0.4", m04, seed), _arm(seed_study, "ViViT", vit, seed),
                     relation="no_worse", tolerance=tolerance, learned=learned),
      claims.arithmetic(f"fig4.{task}.flops_reduction", f"{task} task: MoNE at e_c = 0.4 needs 2x fewer FLOPs per clip than ViViT "
                        f"(at least {min_reduction}x)", "2-3x", vit["gflops"] / m04["gflops"], at_least=min_reduction, unit="x"),
      beats_nested(f"fig4.{task}.mone_beats_matvivit", f"{task} task: at its cheapest point inside MatViViT's curve, MoNE is more "
                   "accurate than MatViViT at the same FLOPs (interpolated)", "significantly better than the nested models",
                   mone, matvivit, "MatViViT", seed, learned)]
