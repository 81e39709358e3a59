"""Training: configs and named recipes (`recipes`), one update step (`steps`), evaluation
(`evaluation`), checkpoints (`checkpoints`), device layout (`sharding`) and the loop (`loop`).

  python -m mone.train --config smoke --workdir /tmp/smoke

Nothing is imported here, so that `mone.train.recipes` loads without JAX or Flax."""
