"""Wall-clock speed of MoNE against the dense ViT it saves FLOPs on, on this machine.

  python -m mone.bench --variant S/16 --batch 8 32 --train-batch 8 32 --reps 7 --video B/16x2 --json results/bench/cpu.json

For every (mode, batch) it builds the dense ViT, MoNE at each e_c, the MatViT sub-model with
the FLOPs closest to each MoNE, and the naive masked MoNE (`mone.models.masked`), all from one set of
parameters; jit-compiles them; warms them up; then times them round-robin (A B C ... A B C ...),
so that a change in machine load hits every contender alike, and reports medians.
speed-up = dense median / median, flop_ratio = dense FLOPs / FLOPs (analytic, `mone.flops`),
efficiency = speed-up / flop_ratio: 1.0 means a model turns every saved FLOP into time.

Both sides run the same code with the same tricks: the models share `mone.models.layers.Block`
(heads-major attention, erf GELU, single-pass LayerNorm), and every model processes a batch
in chunks (a `lax.map`; training sums the gradient over chunks), each at the chunk size that
is fastest for it (`--chunk auto`; on the 2-core CPU a chunked dense forward is ~1.2x faster
than a whole-batch one, so a whole-batch baseline would flatter MoNE). Nested models read
their weight slices (`layers.nested_weights`) from variables made outside the chunk loop:
for a forward row once, before timing, as a deployed model keeps them (`prepare`; for MoNE
they hold 0.875x the blocks' projection weights again); for a training row once per step.
Timings only mean something on an otherwise idle machine: every row records the load average.

The package, one concept a module:

- `workloads`: what is timed. A workload is a list of `Contender`s and an input maker:
  `image_workload` (ViT) and `video_workload` (the ViViT factorised encoder, MoNE on its
  spatial transformer).
- `timing`: how. Compiled forward and training steps, round-robin timing, chunk tuning, the rows
  and their table.
- `targets`: the speed targets this repository set, the benchmark's and the GPU report's, and the
  checks that read them off the rows (`check_targets` for the benchmark's).
- `micro`: where the time goes. `block_rows` (--block) times one transformer block's forward and
  backward apart, `matmul_rows` (--matmul) each of its projection matmuls alone.
- `report`: the GPU report (`python -m mone.bench --report`, `make gpu-report`): every GPU speed
  path checked against its reference and timed on ViT-B/16 and ViViT-B/16x2, a per-operation time
  summary and the speed targets, in one budgeted process; `--tiny` runs its code paths on the CPU.
  Its parts: `switches` (the speed paths), `groups` (what it runs, in which order), `correctness`,
  `rows` (the timing groups), `ops` (device time by kind of operation, from a profiler trace and
  the HLO) and `summary`.
- `cli`: the command line (`python -m mone.bench`) and `measure`, its function form; both write
  the rows to a JSON file under results/bench/, which the book's chapter reads.
"""
