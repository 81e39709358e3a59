"""Training: one update step (`steps`), evaluation (`evaluation`), checkpoints (`checkpoints`),
device layout (`sharding`) and the loop (`loop`), for a config of `mone.configs`.

  python -m mone.train --config smoke --workdir /tmp/smoke
"""
