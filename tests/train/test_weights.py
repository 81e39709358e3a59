"""Every run of the ten-seed plan commits its final parameters (results/weights/<run file>.npz), so
that a later analysis evaluates it without retraining: read back, they give the run's accuracy."""
import pytest

from mone import results
from mone.runs import experiments, plan


@pytest.mark.slow
def test_a_committed_weights_file_reproduces_its_runs_accuracy_exactly_on_the_cpu():
  from mone.data import sources
  from mone.train import evaluation, steps
  kept = [cfg for _, cfg in plan.ten_seed_runs() if experiments.weights_path(cfg).exists()]
  assert kept, "no run of the ten-seed plan has committed its weights yet"
  # the cheapest to evaluate: every run's test set is the same 5,000 examples
  cfg = min(kept, key=lambda cfg: results.read_json(experiments.run_path(cfg))["evals"][0]["gflops"])
  m = results.read_json(experiments.run_path(cfg))
  params = experiments.stored_params(cfg)  # every parameter, as committed
  test_src = sources.source(cfg, "test")
  model = steps.build_model(cfg)
  first = m["evals"][0]  # the run's own budget
  got = evaluation.evaluate(cfg, model, params, test_src, e_c=first["e_c"], width_index=first["width_index"])
  assert got["num_examples"] == first["num_examples"]
  assert results.rounded(got["accuracy"]) == first["accuracy"] == m["accuracy"]


def test_the_queue_writes_every_parameter_for_a_ten_seed_run_and_only_the_routers_inputs_before():
  import numpy as np
  kept = [cfg for _, cfg in plan.ten_seed_runs() if experiments.weights_path(cfg).exists()]
  assert kept
  experiments.stored_params(kept[0])  # raises unless the file holds every parameter of the model
  older = next(cfg for _, cfg in plan.runs() if plan.keeps_router_weights(cfg) and not plan.keeps_weights(cfg)
               and experiments.weights_path(cfg).exists())
  with np.load(experiments.weights_path(older)) as part:
    assert {n.split("/")[0] for n in part.files} == set(experiments.ROUTER_INPUTS)
