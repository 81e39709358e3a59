"""Small shared test helpers: the repository's root, a tiny training config and command, random
parameters, and matmul MACs read from HLO."""
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np

from mone.configs import recipes, schema

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
