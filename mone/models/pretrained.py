"""Start MoNE, MatViT or a ViT from a pretrained dense ViT: big_vision's `.npz` checkpoints.

The paper builds MoNE on a ViT's own weights: the nested experts are slices of the dense
projections, so a dense checkpoint is a complete MoNE but for the router and Eq. 1's alpha, which
keep their initialisation. `load_big_vision` maps big_vision's ViT (`pool_type='gap'`, learned
position embeddings, per-layer or scanned; the name map is at `convert_big_vision`) onto
`mone.models.vit.ViT`. Its tanh GELU against `mone`'s exact erf (`mone.models.fused_mlp.gelu`)
shifts converted logits by about 1e-3 of their scale, well inside what fine-tuning moves. Usage
(MoNE fine-tuned from a pretrained ViT-S/16 at 224 px)::

  cfg = mone.models.config.vit("S/16", num_classes=1000)
  model = mone.models.kinds.build(cfg, "mone")
  init = model.init(jax.random.key(0), images, capacities)["params"]
  params = mone.models.pretrained.load_big_vision("S_16-i21k.npz", init)   # router, alpha: from init
"""
import numpy as np

_LN = {"LayerNorm_0": "ln1", "LayerNorm_1": "ln2"}


def read_npz(path) -> dict:
  """A big_vision .npz checkpoint as {'a/b/c': array} (its keys are the '/'-joined param paths)."""
  with np.load(path, allow_pickle=False) as f:
    return {k: np.asarray(f[k]) for k in f.files}


def resample_posemb(posemb, num_tokens: int) -> np.ndarray:
  """Learned position embeddings [1, g*g, D] resampled (bilinear, as big_vision's
  high-resolution fine-tuning) to a square grid of num_tokens tokens."""
  import scipy.ndimage
  posemb = np.asarray(posemb)
  n, g_new = posemb.shape[1], int(round(np.sqrt(num_tokens)))
  g_old = int(round(np.sqrt(n)))
  if g_old * g_old != n or g_new * g_new != num_tokens:
    raise ValueError(f"position embeddings must cover a square grid: got {n} tokens -> {num_tokens}")
  if n == num_tokens:
    return posemb
  grid = scipy.ndimage.zoom(posemb.reshape(g_old, g_old, -1), (g_new / g_old, g_new / g_old, 1), order=1)
  return grid.reshape(1, num_tokens, -1).astype(posemb.dtype)


def _blocks(arrays: dict) -> dict[int, dict[str, np.ndarray]]:
  """{layer: {'LayerNorm_0/scale': array, ...}} from per-layer or stacked (scanned) names."""
  out = {}
  for k, v in arrays.items():
    if not k.startswith("Transformer/encoderblock"):
      continue
    head, rest = k[len("Transformer/"):].split("/", 1)
    if head == "encoderblock":  # scanned: one array per name, layers on axis 0
      for l in range(v.shape[0]):
        out.setdefault(l, {})[rest] = v[l]
    else:
      out.setdefault(int(head.split("_")[1]), {})[rest] = v
  return out


# big_vision's names (big_vision/models/vit.py) -> mone.models.vit.ViT's:
#   embedding/{kernel,bias}                      -> embed/conv/{kernel,bias}
#   pos_embedding [1, N, D]                      -> embed/pos_embedding (resampled to another grid)
#   Transformer/encoderblock_l/LayerNorm_0, _1   -> block_l/ln1_*, ln2_*
#   .../MultiHeadDotProductAttention_0/query, key, value [D, H, c]  -> block_l/qkv_kernel [D, 3D]
#   .../MultiHeadDotProductAttention_0/out [H, c, D]                -> block_l/out_kernel [D, D]
#   .../MlpBlock_0/Dense_0, Dense_1              -> block_l/mlp1_*, mlp2_*
#   Transformer/encoder_norm                     -> head/norm (LayerNorm before pooling: the same)
#   head/{kernel,bias}                           -> head/dense (kept from init if the classes differ)
# A scanned checkpoint holds every layer on a leading axis under Transformer/encoderblock/... .
def convert_big_vision(arrays: dict) -> dict:
  """big_vision ViT arrays ({'a/b': array}) as a `mone.models.vit.ViT` parameter tree (numpy),
  without the head's classes checked or the position embeddings resampled (`load_big_vision`
  does both). Refuses a checkpoint whose architecture mone's ViT does not have."""
  unsupported = {"cls": "a class token (pool_type='tok'); mone's ViT pools by global average (Sec. 4.1)",
                 "MAPHead_0": "a MAP head (pool_type='map')", "pre_logits": "a pre-logits layer (rep_size)"}
  for key, why in unsupported.items():
    if any(k == key or k.startswith(key + "/") for k in arrays):
      raise ValueError(f"checkpoint has {why}: not convertible to mone.models.vit.ViT")
  if "Transformer/pos_embedding" in arrays or "Transformer/posembed_input/pos_embedding" in arrays:
    raise ValueError("checkpoint keeps pos_embedding under Transformer/ (a pre-2022 layout); "
                     "re-save it with big_vision's vit.fix_old_checkpoints first")
  missing = [k for k in ("embedding/kernel", "embedding/bias", "pos_embedding", "Transformer/encoder_norm/scale")
             if k not in arrays]
  if missing:
    raise ValueError(f"not a big_vision ViT checkpoint: missing {missing}")
  params = {"embed": {"conv": {"kernel": arrays["embedding/kernel"], "bias": arrays["embedding/bias"]},
                      "pos_embedding": arrays["pos_embedding"]},
            "head": {"norm": {"scale": arrays["Transformer/encoder_norm/scale"],
                              "bias": arrays["Transformer/encoder_norm/bias"]}}}
  if "head/kernel" in arrays:
    params["head"]["dense"] = {"kernel": arrays["head/kernel"], "bias": arrays["head/bias"]}
  for l, b in sorted(_blocks(arrays).items()):
    att = "MultiHeadDotProductAttention_0"
    d = b[f"{att}/query/kernel"].shape[0]
    blk = {f"{_LN[ln]}_{p}": b[f"{ln}/{p}"] for ln in _LN for p in ("scale", "bias")}
    # [D, H, c] per projection -> [D, H c], heads-major: the layout Block splits qkv into.
    blk["qkv_kernel"] = np.concatenate([b[f"{att}/{n}/kernel"].reshape(d, -1) for n in ("query", "key", "value")], 1)
    blk["qkv_bias"] = np.concatenate([b[f"{att}/{n}/bias"].reshape(-1) for n in ("query", "key", "value")])
    blk["out_kernel"] = b[f"{att}/out/kernel"].reshape(-1, d)
    blk["out_bias"] = b[f"{att}/out/bias"]
    for i, name in ((0, "mlp1"), (1, "mlp2")):
      blk[f"{name}_kernel"] = b[f"MlpBlock_0/Dense_{i}/kernel"]
      blk[f"{name}_bias"] = b[f"MlpBlock_0/Dense_{i}/bias"]
    params[f"block_{l}"] = blk
  return params


def load_big_vision(checkpoint, init_params: dict, *, load_head: bool = True) -> dict:
  """Parameters for a `mone.models.vit.ViT` (kind vit, matvit or mone) from a big_vision ViT
  checkpoint (a path or read_npz's dict), on top of init_params (the model's own init):
  what the checkpoint has replaces init, resampling the position embeddings to init's
  grid; the router, alpha and, where the number of classes differs or load_head=False, the
  classifier keep their initialisation. Every other shape must match init's, or a
  ValueError names the parameter."""
  import jax
  arrays = read_npz(checkpoint) if not isinstance(checkpoint, dict) else checkpoint
  loaded = convert_big_vision(arrays)
  n_init = [l for l in init_params if l.startswith("block_")]
  n_ckpt = [l for l in loaded if l.startswith("block_")]
  if len(n_init) != len(n_ckpt):
    raise ValueError(f"checkpoint has {len(n_ckpt)} blocks, the model {len(n_init)}: choose the matching variant")
  num_tokens = init_params["embed"]["pos_embedding"].shape[1]
  loaded["embed"]["pos_embedding"] = resample_posemb(loaded["embed"]["pos_embedding"], num_tokens)
  head = loaded["head"].get("dense")
  if head is not None and (not load_head or head["kernel"].shape != tuple(init_params["head"]["dense"]["kernel"].shape)):
    del loaded["head"]["dense"]

  def merge(init, new, path=""):
    out = {}
    for k, v in init.items():
      if isinstance(v, dict):
        out[k] = merge(v, new.get(k, {}), f"{path}{k}/")
      elif k in new:
        if tuple(np.shape(new[k])) != tuple(np.shape(v)):
          raise ValueError(f"{path}{k}: checkpoint shape {tuple(np.shape(new[k]))} does not match the "
                           f"model's {tuple(np.shape(v))}; choose the matching variant")
        out[k] = jax.numpy.asarray(new[k], dtype=v.dtype)
      else:
        out[k] = v
    return out

  return merge(init_params, loaded)
