"""Small shared test helpers: the repository's root, a tiny training config and command, random
parameters, matmul MACs read from HLO, and two implementations of one model compared (gradients, training)."""
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from mone.configs import profiles, recipes, schema
from mone.data import pipeline, sources
from mone.train import steps

REPO = Path(__file__).resolve().parent.parent


def tiny(**overrides):
  """The smoke config, shrunk further for fast checks of every training mode."""
  base = dict(steps=6, num_train=128, num_test=64, batch_size=16, eval_batch_size=64,
              warmup_steps=2, log_every=2, checkpoint_every=3, num_devices=1)
  return schema.apply_overrides(recipes.smoke(), {**base, **overrides})


def train_command(workdir, *extra):
  """`python -m mone.train` on the smoke config in workdir, one device, quiet; extra: more
  overrides or options. The option sits between overrides: the command reads both sides."""
  return [sys.executable, "-m", "mone.train", "--config", "smoke", "--workdir", str(workdir),
          "num_devices=1", "--quiet", *extra]


def train_cli(argv, capsys, own_process=False) -> subprocess.CompletedProcess:
  """Runs `python -m mone.train` (argv as `train_command` builds it) and returns its exit status and
  output. In this process (its `main`) unless own_process: a process per bad input spent about
  1.4 s starting Python and JAX to print one line; each family of bad inputs still runs one case
  as its own process, where a warning printed at import would show."""
  if own_process:
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO)
  from mone.train import __main__ as command
  assert argv[1:3] == ["-m", "mone.train"], argv
  try:
    command.main(argv[3:])
    code = 0
  except SystemExit as e:
    code = e.code
  out = capsys.readouterr()
  return subprocess.CompletedProcess(argv, code, out.out, out.err)


def randomize(variables, seed=0, scale=0.3):
  """Replaces every parameter with Gaussian noise so no comparison is trivially zero
  (ViT's zero-initialised head would make every logit 0)."""
  leaves, tree = jax.tree_util.tree_flatten(variables)
  keys = jax.random.split(jax.random.key(seed), len(leaves))
  return jax.tree_util.tree_unflatten(
      tree, [scale * jax.random.normal(k, l.shape, l.dtype) for k, l in zip(keys, leaves)])


def set_alpha(variables, value):
  p = dict(variables["params"])
  p["alpha"] = np.float32(value)
  return {"params": p}


_DEF = re.compile(r"^\s*(?:ROOT\s+)?(\S+)\s*=\s*\w+\[([\d,]*)\]")


def hlo_matmul_macs(hlo_text: str) -> int:
  """Multiply-accumulates of every dot and convolution in an HLO module, from XLA's own
  shapes: prod(output) x prod(contracted dims) for dots; prod(output) x window x C_in for
  convolutions."""
  shapes = {}
  for line in hlo_text.splitlines():
    m = _DEF.match(line)
    if m:
      shapes[m.group(1)] = [int(s) for s in m.group(2).split(",") if s]
  total = 0
  for line in hlo_text.splitlines():
    m = _DEF.match(line)
    if not m:
      continue
    out = int(np.prod(shapes[m.group(1)]))
    if " dot(" in line:
      lhs = re.search(r" dot\(([^,\s]+)", line).group(1)
      dims = [int(d) for d in re.search(r"lhs_contracting_dims=\{([\d,]*)\}", line).group(1).split(",")]
      total += out * int(np.prod([shapes[lhs][d] for d in dims]))
    elif " convolution(" in line:
      rhs = re.search(r" convolution\([^,\s]+,\s*([^,\s\)]+)", line).group(1)
      kernel = shapes[rhs]
      total += out * int(np.prod(kernel)) // kernel[-1]  # kernel layout ...io (01io, 012io)
  return total


# ------------------------------------------------------------------------------------------------
# Two implementations of one model compared: the same gradients, the same training curve.

def smoke_kind(where: str, kind: str, e_c=None, **overrides):
  """The smoke profile's config of model kind `kind` for images (where="image") or the temporal
  video task (where="video"), with 'key=value'-style overrides given as keywords (dotted keys
  through **{...})."""
  over = {"kind": kind, **({"e_c": e_c} if e_c else {}), **overrides}
  if where == "image":
    return profiles.image_config("smoke", **over)
  return profiles.video_config("smoke", "temporal", **over)


def assert_parameter_gradients_agree(ref_cfg, cfg, rtol=1e-4, atol=1e-6):
  """The loss gradient of every parameter under cfg equals ref_cfg's to rtol/atol: both models built
  from the same initialisation (ref_cfg's) and applied to the same four random inputs."""
  params = steps.init_params(ref_cfg, steps.build_model(ref_cfg), jnp.zeros(steps.input_shape(ref_cfg)))
  x = jax.random.uniform(jax.random.key(3), steps.input_shape(ref_cfg, 4), minval=-1, maxval=1)
  y = jax.nn.one_hot(jnp.arange(4) % ref_cfg.model.num_classes, ref_cfg.model.num_classes)
  budget = steps.train_budget(ref_cfg, 0)

  def grads(cfg):
    m = steps.build_model(cfg)
    loss = lambda p: jnp.mean(jax.nn.log_softmax(steps.logits(cfg, m, p, x, budget, jax.random.key(0))[0]) * -y)
    return jax.jit(jax.grad(loss))(params)

  ref, got = grads(ref_cfg), grads(cfg)
  for (path, r), d in zip(jax.tree_util.tree_leaves_with_path(ref), jax.tree_util.tree_leaves(got)):
    np.testing.assert_allclose(d, r, rtol=rtol, atol=atol, err_msg=jax.tree_util.keystr(path))


def first_batches(cfg, n):
  """cfg's first n training batches, as its training loop draws them at seed 0."""
  src = sources.source(cfg, "train")
  return [b for _, b in pipeline.train_batches(src, cfg.batch_size, 0, num_steps=n, num_classes=cfg.model.num_classes)]


def train_on(cfg, batches):
  """The loss at every step, the model and the final parameters of cfg trained on batches from its
  initialisation (images or videos)."""
  model = steps.build_model(cfg)
  tx = steps.make_optimizer(cfg, len(batches))
  params = steps.init_params(cfg, model, jnp.zeros(steps.input_shape(cfg)))
  state = {"params": params, "opt_state": tx.init(params), "step": jnp.int32(0)}
  step_fn = steps.make_train_step(cfg, model, tx)
  losses = []
  for i, b in enumerate(batches):
    state, loss = step_fn(state, {"image": sources.inputs(b), "soft_label": b["soft_label"]}, steps.train_budget(cfg, i))
    losses.append(float(loss))
  return np.array(losses), model, state["params"]
