"""Every registered model builds from its defaults, runs forward and backward (timm-style sweep)."""

import dataclasses

import pytest
import torch

from pdenets.models import create_model, list_models, model_entry
from pdenets.models.registry import GRAPH_INPUTS, register_model


def _to(value, device):
    """``value`` with every tensor in it (nested in tuples and lists too) moved to ``device``."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(_to(item, device) for item in value)
    return value


def _small(name, num_classes=3, device="cpu", **changes):
    """The registered example of ``name``: the model built from it (with ``changes``) on ``device``, and its
    inputs moved there (a graph given to the constructor too: a model keeps it as given)."""
    example = model_entry(name).example(num_classes)
    kwargs = {key: _to(value, device) for key, value in {**example.kwargs, **changes}.items()}
    model = create_model(name, num_classes=num_classes, **kwargs).to(device)
    return model, dataclasses.replace(example, inputs=_to(example.inputs, device))


def test_every_registration_keeps_the_contract(device):
    """Every built-in registration declares how it takes its graph and a small example of itself."""
    missing = [name for name in list_models() if model_entry(name).example is None]
    assert not missing, f"registrations without an example: {missing}"
    assert {model_entry(name).graph_input for name in list_models()} <= set(GRAPH_INPUTS)


@pytest.mark.parametrize("name", list_models())
def test_every_registered_model_builds_runs_and_trains(name, device):
    # device: needs gcn_propagation_matrix and chebyshev_propagation_matrix (operators/slice_graphs.py) to
    # build their ones/arange/full on the weights' device, and SliceGraphs.block_diagonal its index arithmetic
    # there: window-gcn, cheb-gru and pygt-gconv-gru get their example graphs (edge_index pairs) on the device
    torch.manual_seed(0)
    model, example = _small(name, device=device)
    out = model(*example.inputs)
    assert out.shape == example.output_shape and torch.isfinite(out).all()
    assert out.shape[-1] == 3
    out.square().sum().backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
    assert sum(p.numel() for p in model.parameters()) > 0


@pytest.mark.parametrize("name", list_models())
def test_registry_defaults_are_applied_and_overridable(name, device):
    entry = model_entry(name)
    default, _ = _small(name, device=device)
    for key, value in entry.defaults.items():
        if isinstance(value, bool):
            continue
        if key in ("num_steps", "step_size"):  # parameter-free diffusion: the output changes, not the count
            changed, _ = _small(name, device=device, **{key: value / 2 if key == "step_size" else value + 1})
            assert getattr(changed, key) != getattr(default, key), key
            continue
        if key == "dropout":
            assert _small(name, device=device, dropout=0.1)[0].dropout == 0.1
            continue
        model, _ = _small(name, device=device, **{key: value * 2})
        assert sum(p.numel() for p in model.parameters()) != sum(p.numel() for p in default.parameters()), key


def test_fixed_arguments_define_the_variant(device):
    """A variant's fixed arguments are its definition: repeating one is fine, another value is refused (never
    silently overridden), and the variant's own factory refuses it too."""
    from pdenets.models.diffresnet import no_diff_resnet

    assert model_entry("no-diff-resnet").fixed == {"num_steps": 0}
    assert _small("no-diff-resnet", device=device)[0].num_steps == 0
    assert _small("no-diff-resnet", device=device, num_steps=0)[0].num_steps == 0
    with pytest.raises(ValueError, match="defined with num_steps=0; it cannot be built with num_steps=5"):
        _small("no-diff-resnet", device=device, num_steps=5)
    with pytest.raises(ValueError, match="num_steps=5"):
        no_diff_resnet(2, 2, num_steps=5)
    assert _small("diff-resnet", device=device, num_steps=5)[0].num_steps == 5


def test_graph_inputs(device):
    assert {name for name in list_models() if model_entry(name).graph_input == "forward"} == {
        "gat",
        "gcn",
        "sage-maxpool",
        "sage-mean",
        "coin-forecast",
        "cheb-gru",
        "pygt-gconv-gru",
        "window-gcn",
        "window-mlp",
    }
    assert {name for name in list_models() if model_entry(name).graph_input == "constructor"} == {
        "coin-mlp",
        "diff-resnet",
        "no-diff-resnet",
    }
    with pytest.raises(ValueError, match="graph_input must be one of .*did you mean 'forward'"):
        register_model("doc-model", family="example", graph_input="forwards")


def test_families_and_architecture_defaults(device):
    """Families list the models; an entry holds architecture defaults only (how a protocol trains a model is
    the task's: node classification's optimizer table below)."""
    from pdenets.tasks.node_classification import NodeClassificationConfig, NodeClassificationTask
    from pdenets.tasks.node_classification.task import MODEL_NAMES

    assert list_models("diffusion") == ["diff-resnet", "no-diff-resnet"]
    assert {"hamiltonian-74", "hamiltonian-74-fractional", "resnet-44", "preresnet-20"} <= set(
        list_models("image")
    )
    assert list_models("message-passing") == ["gat", "gcn", "sage-maxpool", "sage-mean"]
    assert not hasattr(model_entry("gat"), "training")
    assert model_entry("gcn").defaults == {"hidden_features": 16, "dropout": 0.5}
    assert MODEL_NAMES == ("diff-resnet", "no-diff-resnet", "gcn", "sage-mean", "sage-maxpool", "gat")
    task = NodeClassificationTask(NodeClassificationConfig())
    gat, gcn = task.hyperparameters("gat", "cora"), task.hyperparameters("gcn", "cora")
    assert (gat.lr, gat.weight_decay, gcn.lr, gcn.weight_decay) == (0.005, 5e-4, 0.01, 5e-4)


def test_typos_list_the_valid_names_and_duplicates_are_refused(device):
    expected = (
        "unknown model 'gnc' \\(did you mean 'gcn'\\?\\); valid: cheb-gru, coin-forecast, coin-mlp, conv4, "
        "diff-resnet"
    )
    with pytest.raises(KeyError, match=expected):
        create_model("gnc", in_features=2, num_classes=2)
    with pytest.raises(ValueError, match="already registered"):
        register_model("gcn", family="message-passing")(lambda in_features, num_classes: None)


def test_declared_settings_become_the_factorys_keywords_and_bad_keywords_are_refused(device):
    from pdenets.models.registry import MODEL_REGISTRY

    @register_model(
        "doc-settings",
        family="example",
        settings={"depth": "num_layers", "lam": "options.lam", "s": "options.s"},
    )
    def factory(in_features=2, num_classes=2, num_layers=1, options=None):
        return torch.nn.Linear(in_features, num_classes)

    try:
        entry = model_entry("doc-settings")
        assert entry.settings_arguments({"depth": 3, "lam": 0.1, "s": None, "width": 9}) == {
            "num_layers": 3,
            "options": {"lam": 0.1},
        }  # None is skipped, undeclared settings are ignored
        assert entry.settings_arguments({}) == {}
    finally:
        del MODEL_REGISTRY["doc-settings"]
    for keyword in ("a.b.c", "two words", "", ".lam"):
        with pytest.raises(ValueError, match="must be a name or 'name.name'"):
            register_model("doc-bad", family="example", settings={"depth": keyword})
    assert "doc-bad" not in MODEL_REGISTRY
