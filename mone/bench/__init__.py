"""Wall-clock speed of MoNE against the dense ViT it saves FLOPs on, on this machine.

  python -m mone.bench --variant S/16 --batch 8 32 --train-batch 8 32 --reps 7 --video B/16x2 --json results/bench/cpu.json

Per (mode, batch): the dense ViT, MoNE at each e_c, the MatViT sub-model nearest each MoNE in FLOPs
and the naive masked MoNE (`mone.models.masked`), from one set of parameters, timed round-robin so
that machine load hits all alike; efficiency = speed-up / flop_ratio (`mone.flops`) is 1.0 when
every saved FLOP becomes time. All share `mone.models.layers.Block` and run a batch in chunks at
their fastest size (`--chunk auto`: chunked, the dense forward is ~1.2x faster on the 2-core CPU,
so a whole-batch baseline would flatter MoNE). Nested weight slices are made once per training step, or once before
timing a forward row (`timing.prepare`). Timings need an idle machine: rows record the load average.

Modules: `workloads` (what is timed), `contenders` (the names its rows give it), `timing` (how), `targets`,
`micro` (a block, a matmul), `training` (the training step, `--training`; `attention_share`, its
attention alone), `report` (the GPU report, `--report`), `cli` (writes the rows under results/bench/ for
the book).
"""
