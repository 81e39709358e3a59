"""The small profile's arms: each trained configuration of the ten-seed plan, named once
('image:vit', 'temporal:mone:0.3', 'table1:uniform'), as the training benchmark times them
(`python -m mone.bench --training --arms NAME ...`) and the next profile's calibration trains them
(`mone.chapters.recalibration`). An arm's config is made only when asked for.
"""
import dataclasses

from mone.configs import profiles, schema


@dataclasses.dataclass(frozen=True)
class Arm:
  """One arm of the small profile: its name on the command line (`--arms`), its config's maker
  (called only when the arm is timed) and the 'key=value' overrides it is timed with (`--pair`)."""
  name: str
  make: object  # () -> TrainConfig
  overrides: tuple = ()

  def config(self):
    cfg = self.make()
    return schema.apply_overrides(cfg, list(self.overrides)) if self.overrides else cfg


def arms() -> tuple[Arm, ...]:
  """The small profile's arms, as its ten-seed plan trains them: the images (Figure 3's ViT,
  MatViT, MoD, MoNE at each e_c and the random router), the temporal and appearance videos
  (Figure 4) and Table 1's allocations."""
  image = lambda **kw: (lambda: profiles.image_config("small", **kw))
  mone_image = lambda e_c, **kw: (lambda: profiles.mone_config("small", e_c, **kw))
  video = lambda task, **kw: (lambda: profiles.video_config("small", task, **kw))
  mone_video = lambda task, e_c: (lambda: profiles.mone_config("small", e_c, task=task))
  table1 = lambda allocation, e_c=None: (lambda: profiles.table1_config("small", allocation, e_c))
  grid = profiles.grid("small")
  out = [Arm("image:vit", image(kind="vit")), Arm("image:matvit", image(kind="matvit")),
         Arm("image:mod", image(kind="mod"))]
  out += [Arm(f"image:mone:{e}", mone_image(e)) for e in grid.image_e_c]
  out += [Arm(f"image:mone:{e}:random", mone_image(e, **{"model.router": "random"})) for e in (0.2, 0.3)]
  for task in ("temporal", "appearance"):
    out += [Arm(f"{task}:vit", video(task, kind="vit")), Arm(f"{task}:matvit", video(task, kind="matvit"))]
    out += [Arm(f"{task}:mone:{e}", mone_video(task, e)) for e in grid.video_e_c[task]]
  out += [Arm("table1:proportionate", table1("proportionate")), Arm("table1:uniform", table1("uniform")),
          Arm("table1:greedy:0.4", table1("greedy", 0.4)), Arm("table1:mod_greedy:0.4", table1("mod_greedy", 0.4))]
  return tuple(out)


def select(names) -> tuple[Arm, ...]:
  """The arms named (all where names is empty); an unknown name is a ValueError listing them."""
  every = arms()
  if not names:
    return every
  known = {a.name: a for a in every}
  unknown = [n for n in names if n not in known]
  if unknown:
    raise ValueError(f"--arms: unknown arm(s) {unknown}; the arms are {sorted(known)}")
  return tuple(known[n] for n in names)
