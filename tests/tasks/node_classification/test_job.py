"""Node-classification protocol: pinned down piece by piece on a tiny graph, then end to end."""

import pytest

from pdenets.data.transforms import prepared_graph
from pdenets.experiments import job_key
from pdenets.tasks.node_classification.model import build_network as _build_model
from pdenets.tasks.node_classification.task import (
    DiffusionHyperparameters,
    NodeClassificationConfig,
    NodeClassificationTask,
    NodeJob,
)

from ...graph_fixtures import write_sbm_npz


@pytest.fixture()
def graph(tmp_path):
    return str(write_sbm_npz(tmp_path / "sbm.npz"))


def task(graph, **changes):
    values = dict(
        datasets=[graph],
        models=["diff-resnet"],
        num_splits=1,
        num_inits=1,
        max_epochs=20,
        patience=5,
        train_per_class=10,
        val_per_class=10,
        workers=1,
    )
    values.update(changes)
    return NodeClassificationTask(NodeClassificationConfig(**values))


def first_job(graph, **changes) -> NodeJob:
    return task(graph, **changes).jobs()[0]


def test_diffusing_in_a_hidden_width_builds_that_model_and_keys_its_runs(graph):
    from pdenets.experiments.config import ConfigError

    paper, hidden = first_job(graph), first_job(graph, diffuse_in="hidden", diffusion_width=8)
    assert paper.hyperparameters.hidden_features is None  # the paper's model diffuses in the input width
    assert job_key("node-classification", hidden) != job_key("node-classification", paper)
    assert job_key(
        "node-classification", first_job(graph, diffuse_in="hidden", diffusion_width=9)
    ) != job_key("node-classification", hidden)
    prepared = prepared_graph(graph, None)
    model = _build_model(hidden, prepared)
    assert model.input_map.out_features == 8 and model.classifier.in_features == 8
    assert _build_model(paper, prepared).input_map is None
    widths = []
    model.diffusion.register_forward_hook(lambda module, inputs, output: widths.append(inputs[0].shape[1]))
    model(prepared.x_sparse)
    assert widths == [8]
    with pytest.raises(ConfigError, match="diffuse_in"):
        task(graph, diffuse_in="output").config.validate()


def test_the_diffusion_steps_of_a_job_are_decided_in_one_place(graph, monkeypatch):
    """r: the graph's setting, the depth study's depth over it, a variant's fixed value over both, 0 for a
    model that takes its graph at forward; the model is built with it and only r > 0 splits over torchrun."""
    from pdenets.tasks.node_classification import model as networks
    from pdenets.tasks.node_classification import task as module

    config = dict(models=["diff-resnet", "no-diff-resnet", "gcn"], depths=[3])
    config["diffusion"] = {"default": DiffusionHyperparameters(0.25, 7, 0.25)}
    jobs = task(graph, **config).jobs()
    steps = {(job.model, job.depth): networks.diffusion_steps(job) for job in jobs}
    assert steps[("diff-resnet", None)] == 7 and steps[("diff-resnet", 3)] == 3
    assert steps[("no-diff-resnet", None)] == 0 and steps[("gcn", None)] == 0 and steps[("gcn", 3)] == 0
    prepared = module.prepared_graph(graph, None)
    for job in jobs:
        built = networks.build_network(job, prepared)
        assert getattr(built, "num_steps", 0) == steps[(job.model, job.depth)], job.model
    monkeypatch.setattr(module.dist, "is_initialized", lambda: True)
    monkeypatch.setattr(module.dist, "get_world_size", lambda: 2)
    assert {job.model for job in jobs if module._split_over_processes(job)} == {"diff-resnet"}
