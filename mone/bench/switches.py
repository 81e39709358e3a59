"""The GPU report's speed switches: each GPU speed path of MoNE, its fast value and the reference
value it replaces, and whether this machine can switch it. The report checks every fast path against
its reference and times each switch turned back alone, so that a path is kept only for what it gains."""
import dataclasses

import jax
import jax.numpy as jnp

from mone.models import config


@dataclasses.dataclass(frozen=True)
class Switch:
  """One speed path: its value in the default (fast) setting and the reference value it is
  compared against. kind: 'config' (a field of the model config), 'compiler' (XLA options of
  one compilation) or 'none' (the path does not exist yet: listed, never timed)."""
  name: str
  fast: str | None
  reference: str | None
  modes: tuple        # the modes it can change ('train' only: a backward-pass path)
  kind: str
  note: str
  field: str | None = None  # kind 'config': the model config field it sets, if not its name
  # The families whose default setting takes `fast` (elsewhere the config's own default stays,
  # and the switch is never flipped there).
  families: tuple = ("check", "image", "video")
  # The dtypes its fast path computes in, None: any. cuDNN's fused attention has no float32
  # kernel, so asking it for one only fails; the correctness check skips such a dtype.
  dtypes: tuple | None = None

  @property
  def config_field(self) -> str:
    return self.field or self.name


ALL_SWITCHES = ("attention", "grad_barrier", "command_buffers", "fused_mlp", "layer_loop")


def switches(backend: str) -> tuple:
  """The speed switches, in the order their variants are compiled (most telling first)."""
  gpu = backend == "gpu"
  return (
      Switch("attention", "cudnn" if gpu else "dot_product", "xla", ("forward", "train"), "config",
             "attention implementation: jax.nn.dot_product_attention (cuDNN's fused kernel on a GPU) "
             "against the reference attention (layers.attention)",
             dtypes=("float16", "bfloat16") if gpu else None),
      Switch("grad_barrier", "off", "on", ("train",), "config",
             "layers.materialize_grad's conditional in every block's backward: 'on' (the CPU's "
             "default) or none"),
      # XLA:CPU accepts the option and has no command buffers: off a GPU it is compiled in forward
      # groups only, to exercise the path, and changes nothing.
      Switch("command_buffers", "on", "off", ("forward", "train") if gpu else ("forward",), "compiler",
             "XLA:GPU command buffers (CUDA graphs) for the compiled step; 'off' passes "
             "COMMAND_BUFFERS_OFF as compiler options of that compilation alone"
             + ("" if gpu else " (no effect on this backend)")),
      # Triton on a GPU; Pallas's interpret mode on the CPU (slow: exercises the path only).
      Switch("fused_mlp", "pallas", "xla", ("forward", "train"), "config",
             "each group's MLP as one Pallas kernel keeping the 4D-wide hidden layer on chip "
             "(mone.models.fused_mlp; model config mlp='pallas') against the XLA expression ('xla')"
             + ("" if gpu else " (interpret mode on this backend)"), field="mlp"),
      # Compile time: the ViViT training step outlasted 200 s unrolled. Scanned only where that
      # is the problem (and in the correctness check), until its run-time cost is measured.
      Switch("layer_loop", "scan", "unroll", ("forward", "train"), "config",
             "the encoder's blocks as one jax.lax.scan over their stacked weights (one block compiled; "
             "mone.models.layers.run_blocks) against one traced block per layer", families=("check", "video")),
  )


# Ways to turn XLA's command buffers off for one compilation, tried in order: the first that
# the installed JAX and XLA accept is used (`probe_command_buffers`).
COMMAND_BUFFERS_OFF = ({"xla_gpu_enable_command_buffer": ""}, {"xla_gpu_graph_min_graph_size": 1 << 30})


def probe_command_buffers() -> dict:
  """Whether command buffers can be switched per compilation here: compiles a tiny function
  with each candidate of COMMAND_BUFFERS_OFF. Returns {'available', 'options', 'errors'}."""
  lowered = jax.jit(lambda x: jnp.sin(x) + 1).lower(jnp.ones(4))
  errors = []
  for options in COMMAND_BUFFERS_OFF:
    try:
      lowered.compile(options)
      return {"available": True, "options": options, "errors": errors}
    except Exception as e:  # an older JAX without compiler_options, or XLA without the flag
      errors.append(f"{options}: {type(e).__name__}: {str(e)[:200]}")
  return {"available": False, "options": None, "errors": errors}


def config_fields(family: str) -> set:
  return {f.name for f in dataclasses.fields(config.ViViTConfig if family == "video" else config.ViTConfig)}


def describe(s: Switch, cmdbuf: dict) -> dict:
  """The report's record of one switch: its fields, whether it is switchable here ('available')
  and how. cmdbuf: `probe_command_buffers()`'s answer."""
  d = dataclasses.asdict(s)
  if s.kind == "config":
    have = {f: s.config_field in config_fields(f) for f in ("image", "video")}
    d["available"] = all(have.values())
    d["how"] = (f"model config field {s.config_field!r} (dataclasses.replace / config overrides)" if d["available"] else
                f"unavailable: the model configs have no field {s.config_field!r} yet ({have})")
  elif s.kind == "compiler":
    d["available"], d["options"] = cmdbuf["available"], cmdbuf["options"]
    d["how"] = (f"compiler options {cmdbuf['options']} of one .lower(...).compile(...)" if d["available"]
                else "not switchable in-process: " + "; ".join(cmdbuf["errors"]))
  else:
    d["available"], d["how"] = False, "not implemented"
  return d
