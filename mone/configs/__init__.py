"""Every configuration, in one place: the training config and its overrides (`schema`), the named
recipes (`recipes`), what each profile trains (`profiles`) and the runs each chapter reads (`grids`).

Nothing here imports JAX or Flax: configs, their hashes and the run plans load without them.
"""
