"""Multi-process data parallelism (jax.distributed on localhost, gloo collectives): each process
loads its share of every batch, and two processes train and evaluate exactly as one."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from mone.data import pipeline as ip

from helpers import REPO
from xla_flags import with_devices


def _source(n=40):
  rng = np.random.default_rng(0)
  return ip.ArraySource({"image": rng.integers(0, 256, (n, 4, 4, 3), dtype=np.uint8),
                         "label": np.arange(n, dtype=np.int32)})


@pytest.mark.slow
@pytest.mark.parametrize("processes", [2, 4])
def test_process_shards_of_each_batch_make_the_single_process_batch(processes):
  src = _source()
  kw = dict(batch_size=8, seed=3, num_steps=12, num_classes=40)  # 12 steps: two epochs and a half
  whole = list(ip.train_batches(src, **kw))
  shards = [list(ip.train_batches(src, process_index=i, process_count=processes, **kw)) for i in range(processes)]
  for step, (s, batch) in enumerate(whole):
    parts = [shard[step][1] for shard in shards]
    assert all(len(p["label"]) == 8 // processes for p in parts)
    for key in ("image", "label", "soft_label"):
      np.testing.assert_array_equal(np.concatenate([p[key] for p in parts]), batch[key])
  # Resuming a process at step k gives its shard of the uninterrupted batches from k on.
  resumed = list(ip.train_batches(src, process_index=1, process_count=processes, start_step=7, **kw))
  assert all(np.array_equal(a["label"], b["label"]) for (_, a), (_, b) in zip(resumed, shards[1][7:]))
  # Evaluation: the same number of batches on every process, padding marked invalid, every example once.
  evals = [list(ip.eval_batches(src, 16, process_index=i, process_count=processes)) for i in range(processes)]
  assert len({len(e) for e in evals}) == 1 and len(evals[0]) == 3
  labels = np.concatenate([b["label"][b["valid"]] for batches in zip(*evals) for b in batches])
  assert sorted(labels.tolist()) == list(range(40))
  with pytest.raises(ValueError, match="must be divisible by the number of processes"):
    ip.train_batches(src, batch_size=6, seed=0, process_count=4)
  with pytest.raises(ValueError, match="process_index must be in"):
    ip.eval_batches(src, 8, process_index=2, process_count=2)


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _train(workdir, devices: int, *extra):
  env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAX_CPU_COLLECTIVES_IMPLEMENTATION": "gloo",
         "XLA_FLAGS": with_devices(devices)}
  cli = [sys.executable, "-m", "mone.train", "--config", "smoke", "--workdir", str(workdir), "--quiet",
         "steps=8", "checkpoint_every=4", "log_every=2", "eval_every=4", "num_val=48", "batch_size=16",
         "eval_batch_size=32", "num_train=128", "num_test=72", *extra]
  return subprocess.Popen(cli, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(*procs):
  outs = [p.communicate(timeout=600) for p in procs]
  for p, (out, err) in zip(procs, outs):
    assert p.returncode == 0, err[-3000:]
  return [out for out, _ in outs]


@pytest.mark.slow
def test_two_processes_killed_mid_run_and_restarted_train_as_one_process_on_two_devices(tmp_path):
  """Two processes (one CPU device each) train, are both SIGKILLed once the step-4 checkpoint is
  saved, restart from the shared checkpoints and end with the metrics of one process holding
  two devices, uninterrupted."""
  def two():
    port = _free_port()  # a fresh coordinator port for each start
    return [_train(tmp_path / "two", 1, "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2",
                   "--process-id", str(i)) for i in range(2)]
  one, first = _train(tmp_path / "one", 2), two()
  # Generous: on a loaded 2-core machine (training beside the suite) the first checkpoint took over 300 s.
  ckpt, deadline = tmp_path / "two" / "checkpoints" / "4", time.time() + 900
  while not ckpt.exists() and all(p.poll() is None for p in first) and time.time() < deadline:
    time.sleep(0.01)
  saved = ckpt.exists()
  for p in first:
    p.send_signal(signal.SIGKILL)
  for p in first:
    p.communicate()
  assert [p.returncode for p in first] == [-signal.SIGKILL] * 2, "both processes must die before the end"
  assert saved, "the step-4 checkpoint did not appear within 900 s: nothing to resume from"
  assert not (tmp_path / "two" / "metrics.json").exists()
  outs = _finish(*two(), one)
  a = json.loads((tmp_path / "one" / "metrics.json").read_text())
  b = json.loads((tmp_path / "two" / "metrics.json").read_text())
  assert b["resumed_from_step"] >= 4 and a["resumed_from_step"] == 0
  np.testing.assert_allclose([l for _, l in b["history"]], [l for _, l in a["history"]], rtol=1e-6)
  assert [e["accuracy"] for e in b["evals"]] == [e["accuracy"] for e in a["evals"]]
  for pa, pb in zip(a["curve"], b["curve"], strict=True):
    assert pb == {**pa, "train_loss": pytest.approx(pa["train_loss"], rel=1e-6)}
  assert b["evals"][0]["num_examples"] == 72  # split over the processes, counted once
  # Only process 0 reports: each logged step and curve point once per attempt that reached it
  # (steps past the step-4 checkpoint may appear twice: the killed attempt and the resumed one).
  lines = [json.loads(l) for l in (tmp_path / "two" / "metrics.jsonl").read_text().splitlines()]
  assert [l["step"] for l in lines][:3] == [2, 4, 4] and [l["step"] for l in lines][-3:] == [6, 8, 8]
  assert "accuracy=" in outs[0] and "accuracy=" not in outs[1]


def test_explicit_process_flags_go_together(tmp_path):
  bad = subprocess.run([sys.executable, "-m", "mone.train", "--config", "smoke", "--workdir", str(tmp_path / "w"),
                        "--coordinator", "127.0.0.1:1234", "--num-processes", "2"], capture_output=True, text=True,
                       cwd=REPO)
  assert bad.returncode == 2 and "--coordinator, --num-processes and --process-id go together" in bad.stderr
  assert not (tmp_path / "w").exists()
