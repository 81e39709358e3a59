"""Training: one update step (`steps`), evaluation (`evaluation`), checkpoints (`checkpoints`) and
their hand-over to the next machine (`handover`), device layout (`sharding`), the host's heap
(`hostmem`) and the loop (`loop`), for a config of `mone.configs`.

  python -m mone.train --config smoke --workdir /tmp/smoke
"""
