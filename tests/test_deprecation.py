"""Renamed arguments: the old names still work, warning and naming the new one; both at once is an error;
the registry's factory translates an old name before merging its defaults."""

import numpy as np
import pytest
import torch

from pdenets.data.synthetic import make_moons, make_synthetic, make_xor
from pdenets.models import create_model
from pdenets.models.forecasting import GraphConvGRU, WindowMLP
from pdenets.models.gnn import GAT, GCN


def _width(model):
    return next(p for name, p in model.named_parameters() if name.endswith("weight")).shape


@pytest.mark.parametrize(
    "build",
    [
        lambda **kw: GCN(5, 3, **kw),
        lambda **kw: GAT(5, 3, **kw),
        lambda **kw: WindowMLP(4, 2, **kw),
        lambda **kw: GraphConvGRU(4, 2, **kw),
        lambda **kw: create_model("sage-mean", in_features=5, num_classes=3, **kw),
        lambda **kw: create_model("window-gcn", in_features=4, num_classes=2, **kw),
    ],
)
def test_hidden_is_hidden_features_with_a_warning(build):
    torch.manual_seed(0)
    new = build(hidden_features=6)
    torch.manual_seed(0)
    with pytest.warns(DeprecationWarning, match="'hidden' is now 'hidden_features'"):
        old = build(hidden=6)
    assert [p.shape for p in old.parameters()] == [p.shape for p in new.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(old.parameters(), new.parameters()))
    assert [p.shape for p in build(hidden_features=7).parameters()] != [p.shape for p in new.parameters()]
    with pytest.raises(TypeError, match="pass 'hidden_features' only"):
        build(hidden=6, hidden_features=6)


def test_the_registry_defaults_use_the_new_name():
    from pdenets.models import list_models, model_entry

    assert not [name for name in list_models() if "hidden" in model_entry(name).defaults]


@pytest.mark.parametrize("make", [lambda **kw: make_xor(5, **kw), lambda **kw: make_moons(5, **kw)])
def test_rng_is_seed_with_a_warning(make):
    new = make(seed=np.random.default_rng(3))
    with pytest.warns(DeprecationWarning, match="'rng' is now 'seed'"):
        old = make(rng=np.random.default_rng(3))
    assert torch.equal(old.points, new.points)
    assert torch.equal(make(seed=3).points, new.points)  # an int seeds default_rng
    assert not torch.equal(make(seed=4).points, new.points)


def test_a_numpy_random_state_still_reproduces_the_paper_scripts():
    """``seed=RandomState(s)`` with ``grid=True``: the draws of ``numpy.random.seed(s)``."""
    np.random.seed(7)
    noise = 0.05 * np.random.standard_normal((2, 2 * 4)).T
    points = make_synthetic("moon", 4, seed=np.random.RandomState(7), grid=True).points.numpy()
    t = np.linspace(0.0, np.pi, 4)
    clean = np.concatenate(
        [np.stack([np.cos(t), np.sin(t)], 1), np.stack([1 - np.cos(t), 0.5 - np.sin(t)], 1)]
    )
    np.testing.assert_allclose(points - clean, noise, atol=1e-12)


def test_a_seed_that_is_not_an_int_or_generator_is_refused():
    with pytest.raises(TypeError, match="seed must be an int or a NumPy generator"):
        make_xor(3, seed=1.5)


def test_a_renamed_setting_is_read_under_its_old_name_with_one_warning_line(tmp_path, capsys):
    """``hidden`` became ``hidden_features`` in every task: as an option, a ``--set`` key (nested too) and a
    YAML key it still works, printing one line; the old name beside the new one is refused."""
    import yaml

    from pdenets.cli import main

    assert main(["run", "coin-tabular", "--hidden", "16", "--print-config"]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["hidden_features"] == 16
    assert err.strip() == (
        "pdenets: warning: the setting 'hidden' is now 'hidden_features'; 'hidden' will be removed "
        "(see CHANGELOG.md)"
    )
    assert main(["run", "node-classification", "--set", "baselines.gcn.hidden=32", "--print-config"]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["baselines"]["gcn"]["hidden_features"] == 32
    assert "'baselines.gcn.hidden' is now 'baselines.gcn.hidden_features'" in err
    config = tmp_path / "old.yaml"
    config.write_text("hidden: 12\n")
    assert main(["run", "coin-forecast", "--config", str(config), "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["hidden_features"] == 12
    config.write_text("hidden: 12\nhidden_features: 12\n")
    assert main(["run", "coin-forecast", "--config", str(config), "--print-config"]) == 2
    assert "'hidden' and its new name 'hidden_features' are both given" in capsys.readouterr().err


def test_the_renamed_fields_keep_the_store_keys_of_the_runs_stored_before():
    """The jobs of three tasks whose specs renamed ``hidden`` hash to the keys the old names gave (computed
    before the rename): a stored run is found again."""
    import dataclasses
    import hashlib

    from pdenets.experiments.task import get_task, job_key

    before = {
        "coin-tabular": (45, "aa55a8c881825d71"),
        "coin-forecast": (32, "af2b64d736db50b4"),
        "node-classification": (8, "a47398571fc31365"),
    }
    for name, expected in before.items():
        task_class = get_task(name)
        config = task_class.quick_config()
        if name == "node-classification":
            config = dataclasses.replace(
                config, models=["diff-resnet", "gcn", "sage-mean", "gat"], baselines={}
            )
        keys = sorted(job_key(name, spec) for spec in task_class(config).jobs())
        assert (len(keys), hashlib.sha256("".join(keys).encode()).hexdigest()[:16]) == expected, name
