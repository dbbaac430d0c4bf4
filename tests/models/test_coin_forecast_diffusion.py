"""``pdenets run coin-forecast`` and ``coin-tabular``: protocols checked against direct computations, toy
runs."""

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from pdenets.data.temporal import load_temporal
from pdenets.models.coin_forecast_diffusion import choose_diffusion, diffuse_forecasts
from pdenets.tasks.coin_forecast.protocol import (
    ForecastSetup,
    diffusion_graph,
    prepare_protocol,
)

OURS = ForecastSetup(lags=4, horizons=3, test_fraction=0.2, val_fraction=0.1)


def _ring(nodes, stride=1):
    return [[i, (i + stride) % nodes] for i in range(nodes)] + [
        [(i + stride) % nodes, i] for i in range(nodes)
    ]


def _diffusing_series(path, steps=160, nodes=12, seed=0, time_varying=False):
    """x_{t+1} = 0.9 W x_t + noise on a ring (W row-normalized, no self-loops): the future is the neighbours'
    present."""
    rng = np.random.default_rng(seed)
    values = np.zeros((steps, nodes))
    values[0] = rng.normal(size=nodes)
    for t in range(1, steps):
        values[t] = 0.45 * (np.roll(values[t - 1], 1) + np.roll(values[t - 1], -1)) + 0.3 * rng.normal(
            size=nodes
        )
    if time_varying:
        content = {
            "y": values.tolist(),
            "edge_mapping": {
                "edge_index": {str(t): _ring(nodes, stride=1 + t % 2) for t in range(steps)},
                "edge_weight": {str(t): [1.0 + t % 3] * (2 * nodes) for t in range(steps)},
            },
        }
    else:
        content = {"FX": values.tolist(), "edges": _ring(nodes)}
    path.write_text(json.dumps(content))
    return values


def _learned_run(path, model="window-mlp", seed=0, **training):
    from pdenets.tasks.coin_forecast.task import ForecastJob, ForecastTraining, fit_job

    series = load_temporal(path)
    data = prepare_protocol(series, "ours", OURS)
    settings = {
        "hidden_features": 8,
        "step_size": 0.1,
        "num_steps": 1,
        "learn_step_size": True,
        "epochs": 400,
        "patience": 30,
        "lr": 0.01,
        "weight_decay": 0.0,
        "batch_rows": 48,
        "eval_steps": 5,
        "min_improvement": 0.005,
        **training,
    }
    job = ForecastJob(
        dataset=str(path),
        protocol="ours",
        model=model,
        seed=seed,
        setup=OURS,
        training=ForecastTraining(**settings),
    )
    fitted = fit_job(job, data, choose=False)
    return data, (fitted.prediction, fitted.info)


@dataclasses.dataclass(frozen=True)
class _Selection:
    """The parts of a protocol's windows that COIN's choice reads."""

    targets: torch.Tensor
    masks: dict
    target_steps: torch.Tensor
    graphs: object


def _choose(prediction, data, step_sizes, num_steps, **options):
    """COIN's choice on the validation entries of a protocol's windows (or of a :class:`_Selection`)."""
    from pdenets.models.coin_forecast_diffusion import choose_diffusion

    graphs = data.graphs
    return choose_diffusion(
        prediction,
        data.targets,
        graphs,
        data.target_steps,
        data.masks["val"],
        step_sizes,
        num_steps,
        **options,
    )


# ----------------------------------------------------------------------------------------
# COIN over a model: diffusion only where the selection days show a gain beyond their noise


def _selection_data(days, gain_per_day, noise, seed=0, nodes=4):
    """Validation entries of ``days`` one-horizon origins where diffusing by one step changes the squared
    error by ``gain_per_day`` plus noise: the target is the neighbours' mean, the model predicts the own
    value."""
    from pdenets.operators.slice_graphs import SliceGraphs

    generator = torch.Generator().manual_seed(seed)
    ring = diffusion_graph(
        (torch.tensor([[i for i in range(nodes)], [(i + 1) % nodes for i in range(nodes)]]), None), nodes
    )
    prediction = torch.randn(days, nodes, 1, generator=generator, dtype=torch.float64)
    neighbours = prediction - SliceGraphs([ring], nodes, ids=torch.zeros(days, dtype=torch.long)).laplacian(
        prediction
    )
    targets = (
        gain_per_day * neighbours
        + (1 - gain_per_day) * prediction
        + noise * torch.randn(days, nodes, 1, generator=generator, dtype=torch.float64)
    )
    mask = torch.ones(days, nodes, 1, dtype=torch.bool)
    return prediction, _Selection(
        targets=targets,
        masks={"val": mask},
        target_steps=torch.arange(days)[:, None],
        graphs=SliceGraphs([ring], nodes, ids=torch.zeros(days, dtype=torch.long)),
    )


def test_one_validation_snapshot_never_buys_diffusion():

    # the diffusion helps on the one validation day, and would help on test: too little to tell, the model is
    # kept
    prediction, data = _selection_data(days=1, gain_per_day=1.0, noise=0.0)
    choice = _choose(prediction, data, [0.0, 0.5, 1.0], [1, 2])
    assert (choice.step_size, choice.num_steps, choice.blocks) == (0.0, 0, 1)  # one block: too few to judge
    assert torch.equal(choice.forecasts, prediction)
    # 30 days of the same gain: diffusion is taken, the strongest candidate (γ = 1, one step: the neighbours'
    # mean)
    prediction, data = _selection_data(days=30, gain_per_day=1.0, noise=0.0)
    choice = _choose(prediction, data, [0.0, 0.5, 1.0], [1, 2])
    assert (choice.step_size, choice.num_steps, choice.blocks) == (1.0, 1, 30) and choice.lower_bound > 0
    # 30 days of pure noise: no candidate's bound clears zero
    prediction, data = _selection_data(days=30, gain_per_day=0.0, noise=1.0)
    kept = _choose(prediction, data, [0.0, 0.5, 1.0], [1, 2])
    assert (kept.step_size, kept.blocks) == (0.0, 30)  # kept with every block judged: not "too few blocks"


def test_the_lower_bound_is_students_on_block_means():
    from scipy.stats import t as student

    from pdenets.models.coin_forecast_diffusion import block_gains, diffuse_forecasts

    prediction, data = _selection_data(days=12, gain_per_day=0.6, noise=0.2, seed=4)
    choice = _choose(prediction, data, [0.5], [1])
    diffused = diffuse_forecasts(prediction, data.graphs, 0.5, 1)
    gains = ((prediction - data.targets).square() - (diffused - data.targets).square()).mean(
        (1, 2)
    )  # per day
    bound = float(gains.mean() - student.ppf(0.95, 11) * gains.std() / math.sqrt(12))
    assert bound == pytest.approx(0.3826650824, abs=1e-9)  # this seed's days: a clear but noisy gain
    assert (choice.step_size, choice.blocks) == (0.5, 12) and choice.lower_bound == pytest.approx(bound)
    assert choice.gain == pytest.approx(float(gains.mean()))
    assert _choose(prediction, data, [0.5], [1], confidence=0.9999).step_size == 0.0  # a stricter bound
    assert torch.allclose(
        block_gains(prediction, diffused, data.targets, data.masks["val"], data.target_steps, 3),
        gains.reshape(4, 3).mean(1),
    )


def test_exactly_five_blocks_are_enough_to_judge_a_diffusion_and_four_are_not():
    from pdenets.models.coin_forecast_diffusion import MIN_SELECTION_BLOCKS

    assert MIN_SELECTION_BLOCKS == 5
    prediction, data = _selection_data(days=5, gain_per_day=1.0, noise=0.0)
    choice = _choose(prediction, data, [0.0, 0.5, 1.0], [1, 2])
    assert (choice.step_size, choice.num_steps, choice.blocks) == (1.0, 1, 5)
    prediction, data = _selection_data(days=4, gain_per_day=1.0, noise=0.0)
    assert (_choose(prediction, data, [0.0, 0.5, 1.0], [1, 2]).step_size, choice.blocks) == (0.0, 5)
    assert _choose(prediction, data, [0.0, 0.5, 1.0], [1, 2]).blocks == 4


def _three_horizon_selection(origins, seed=0, nodes=4):
    """Validation windows of ``origins`` origins and horizons 1..3 (each target day forecast by up to three
    origins): the target is the neighbours' mean, the model predicts the own value."""
    from pdenets.operators.slice_graphs import SliceGraphs

    generator = torch.Generator().manual_seed(seed)
    ring = diffusion_graph(
        (torch.tensor([[i for i in range(nodes)], [(i + 1) % nodes for i in range(nodes)]]), None), nodes
    )
    days = origins + 2
    values = torch.randn(days, nodes, generator=generator, dtype=torch.float64)
    graphs = SliceGraphs([ring], nodes, ids=torch.zeros(days, dtype=torch.long))
    neighbours = values - graphs.laplacian(values[:, :, None])[:, :, 0]
    target_steps = torch.arange(origins)[:, None] + torch.arange(3)
    prediction = values[target_steps].permute(0, 2, 1)  # (S, N, H)
    targets = neighbours[target_steps].permute(0, 2, 1) + 0.05 * torch.randn(
        origins, nodes, 3, generator=generator, dtype=torch.float64
    )
    mask = torch.ones(origins, nodes, 3, dtype=torch.bool)
    window_graphs = SliceGraphs([ring], nodes, ids=torch.zeros(origins, dtype=torch.long))
    return prediction, _Selection(targets, {"val": mask}, target_steps, window_graphs)


def test_three_horizons_make_blocks_of_three_target_days_and_the_bound_counts_blocks():
    """H = 3: the gains are grouped by distinct target day in blocks of 3 days (15 days: 5 blocks, judged; 14
    days: 4 blocks, the model kept), and Student's bound has blocks − 1 degrees of freedom."""
    from scipy.stats import t as student

    from pdenets.models.coin_forecast_diffusion import block_gains, diffuse_forecasts

    prediction, data = _three_horizon_selection(origins=13)  # target days 0..14
    choice = _choose(prediction, data, [1.0], [1])
    assert choice.blocks == 5 and choice.step_size == 1.0
    diffused = diffuse_forecasts(prediction, data.graphs, 1.0, 1)
    gains = block_gains(prediction, diffused, data.targets, data.masks["val"], data.target_steps, 3)
    assert gains.shape == (5,)
    bound = float(gains.mean() - student.ppf(0.95, 4) * gains.std() / math.sqrt(5))
    assert choice.lower_bound == pytest.approx(bound)
    prediction, data = _three_horizon_selection(origins=12)  # target days 0..13: 4 whole blocks
    kept = _choose(prediction, data, [1.0], [1])
    assert (kept.step_size, kept.blocks) == (0.0, 4)


def test_the_forecast_graph_loses_its_self_loops_before_its_rows_are_normalized():
    # node 0 has a self-loop of weight 3 and one neighbour: its row is (0, 1), not (0, 1/4) (normalized, then
    # cut)
    edges = (torch.tensor([[0, 0, 1], [0, 1, 0]]), torch.tensor([3.0, 1.0, 2.0]))
    dense = diffusion_graph(edges, 2).to_dense()
    torch.testing.assert_close(dense, torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=torch.float64))


def test_weight_decay_never_reaches_the_learned_step_size(tmp_path):
    """Without edges the loss does not depend on γ: only a weight decay on its logit could move it (towards
    γ_max / 2 = 0.5), and the optimizer gives the logit none."""
    path = tmp_path / "isolated.json"
    path.write_text(json.dumps({"FX": np.random.default_rng(0).normal(size=(60, 4)).tolist(), "edges": []}))
    _, (_, info) = _learned_run(
        path,
        model="coin-forecast",
        epochs=3,
        patience=100,
        lr=0.05,
        weight_decay=1.0,
        batch_rows=16,
        min_improvement=0.0,
    )
    assert info["steps"] > 10
    assert info["learned_step_size"] == pytest.approx(0.1, rel=1e-6)


def test_diffusion_of_forecasts_is_explicit_steps_on_each_origins_graph(tmp_path):
    from pdenets.models.coin_forecast_diffusion import diffuse_forecasts

    path = tmp_path / "daily.json"
    _diffusing_series(path, steps=30, nodes=6, time_varying=True)
    data = prepare_protocol(load_temporal(path), "ours", OURS)
    forecasts = torch.randn_like(data.targets)
    out = diffuse_forecasts(forecasts, data.graphs, 0.3, 2)
    for origin in (0, 5, len(forecasts) - 1):
        weights = data.graphs.graph(origin).to_dense()
        step = torch.eye(6, dtype=torch.float64) - 0.3 * (torch.diag(weights.sum(1)) - weights)
        torch.testing.assert_close(out[origin], step @ step @ forecasts[origin])


def test_the_region_graph_compares_the_forecaster_that_diffuses_itself_with_its_convection():
    from pdenets.tasks.coin_forecast.config import CONVECTION_ALONE, LEARNED
    from pdenets.tasks.coin_forecast.protocol import diffuses_itself
    from pdenets.tasks.coin_forecast.report import _diffused_and_convection

    assert set(CONVECTION_ALONE) == {model for model in LEARNED if diffuses_itself(model)}
    assert all(m in LEARNED and not diffuses_itself(m) for m in CONVECTION_ALONE.values())
    (diffused, convection), *_ = CONVECTION_ALONE.items()
    assert _diffused_and_convection(["linear", convection, "window-gcn", diffused]) == (diffused, convection)
    assert _diffused_and_convection(["linear", diffused, "window-gcn"]) is None  # nothing to compare with


# ----------------------------------------------------------------------------------------
# block gains and COIN's choice against NumPy: (I − γL)^r per origin, per-day means, Student's bound


def _path_graphs(days, nodes=3):
    """Origins alternating between a weighted path 0–1–2 and a star around node 2, with their dense W."""
    from pdenets.operators.slice_graphs import SliceGraphs

    path = np.zeros((nodes, nodes))
    path[0, 1] = path[1, 0] = 0.5
    path[1, 2] = path[2, 1] = 1.0
    star = np.zeros((nodes, nodes))
    star[0, 2] = star[2, 0] = star[1, 2] = star[2, 1] = 0.75
    ids = torch.arange(days) % 2
    graphs = SliceGraphs([torch.from_numpy(path), torch.from_numpy(star)], nodes, ids=ids)
    return graphs, [path if int(i) == 0 else star for i in ids]


def _numpy_diffused(prediction, dense, gamma, steps):
    out = prediction.copy()
    for s, weights in enumerate(dense):
        step = np.eye(len(weights)) - gamma * (np.diag(weights.sum(1)) - weights)
        out[s] = np.linalg.matrix_power(step, steps) @ prediction[s]
    return out


def test_block_gains_average_each_target_day_then_whole_blocks_in_day_order():
    from pdenets.models.coin_forecast_diffusion import block_gains

    # three origins, two horizons, two nodes: origin s forecasts days s + 1 and s + 2, given in reverse order
    target_steps = torch.tensor([[3, 4], [2, 3], [1, 2]])
    prediction = torch.zeros(3, 2, 2, dtype=torch.float64)
    diffused = torch.ones(3, 2, 2, dtype=torch.float64)
    targets = torch.tensor(
        [[[2.0, 0.0], [1.0, 3.0]], [[0.5, 4.0], [1.5, 2.0]], [[3.0, 1.0], [0.0, 2.5]]], dtype=torch.float64
    )
    mask = torch.ones(3, 2, 2, dtype=torch.bool)
    mask[1, 0, 1] = False  # day 3 keeps three entries, not four
    mask[2, 1, 0] = False  # day 1 keeps one
    # gain of an entry: t² − (1 − t)² = 2t − 1; each day's mean over its entries, in the order of the days
    per_day = {}
    for s in range(3):
        for n in range(2):
            for h in range(2):
                if mask[s, n, h]:
                    per_day.setdefault(int(target_steps[s, h]), []).append(2 * float(targets[s, n, h]) - 1)
    days = [float(np.mean(per_day[d])) for d in sorted(per_day)]  # days 1, 2, 3, 4
    gains = block_gains(prediction, diffused, targets, mask, target_steps, 2)
    np.testing.assert_allclose(gains.numpy(), [(days[0] + days[1]) / 2, (days[2] + days[3]) / 2], rtol=1e-14)
    # the pooled mean of a block's entries would differ: day 1 has one entry, day 2 four
    assert gains[0] != pytest.approx((2 * 3.0 - 1 + sum(per_day[2])) / 5)
    # three-day blocks: the fourth day is an incomplete block, dropped
    np.testing.assert_allclose(
        block_gains(prediction, diffused, targets, mask, target_steps, 3).numpy(), [np.mean(days[:3])]
    )


def test_the_choice_is_the_grid_point_of_highest_student_bound_computed_by_hand():
    from scipy.stats import t as student

    generator = np.random.default_rng(0)
    days = 24
    graphs, dense = _path_graphs(days)
    prediction = generator.normal(size=(days, 3, 1))
    # the truth is two steps of γ = 0.3 away from the forecasts, plus noise
    targets = _numpy_diffused(prediction, dense, 0.3, 2) + 0.1 * generator.normal(size=(days, 3, 1))
    steps = torch.arange(days)[:, None]
    mask = torch.ones(days, 3, 1, dtype=torch.bool)

    def bound(gamma, r):
        out = _numpy_diffused(prediction, dense, gamma, r)
        gains = ((prediction - targets) ** 2 - (out - targets) ** 2).mean(
            axis=(1, 2)
        )  # H = 1: one day a block
        return gains.mean() - student.ppf(0.95, days - 1) * gains.std(ddof=1) / np.sqrt(days), out

    def choose(step_sizes, num_steps):
        return choose_diffusion(
            torch.from_numpy(prediction),
            torch.from_numpy(targets),
            graphs,
            steps,
            mask,
            step_sizes,
            num_steps,
        )

    for grid in ([1, 3], [2], [1, 2, 3]):
        candidates = {(gamma, r): bound(gamma, r) for gamma in (0.1, 0.3) for r in grid}
        best = max(candidates, key=lambda key: candidates[key][0])
        choice = choose([0.0, 0.3, 0.1], grid)
        assert candidates[best][0] > 0 and (choice.step_size, choice.num_steps) == best
        assert choice.lower_bound == pytest.approx(candidates[best][0], rel=1e-10)
        np.testing.assert_allclose(choice.forecasts.numpy(), candidates[best][1], rtol=1e-12, atol=1e-14)
        assert choice.selection_mse == pytest.approx(((candidates[best][1] - targets) ** 2).mean(), rel=1e-12)
        assert choice.blocks == days
    # r = 2, the truth's, wins once it is on the grid; off the grid it is never evaluated
    assert (choose([0.1, 0.3], [2]).step_size, choose([0.1, 0.3], [1, 2, 3]).num_steps) == (0.3, 2)
    assert choose([0.1, 0.3], [1, 3]).num_steps in (1, 3)


def test_a_model_kept_reports_its_own_error_and_an_unstable_step_is_refused():
    from pdenets.operators import UnstableStepSizeError

    generator = np.random.default_rng(1)
    days = 12
    graphs, _ = _path_graphs(days)
    prediction = torch.from_numpy(generator.normal(size=(days, 3, 2)))
    targets = prediction + 0.01 * torch.from_numpy(generator.normal(size=(days, 3, 2)))  # nothing to smooth
    steps = torch.arange(days)[:, None] + torch.arange(2)
    mask = torch.ones(days, 3, 2, dtype=torch.bool)
    mask[0] = False  # day 0 never counts: days 1 … 12, six blocks of H = 2
    choice = choose_diffusion(prediction, targets, graphs, steps, mask, [0.1, 0.3], [1, 2])
    assert (choice.step_size, choice.num_steps, choice.gain, choice.lower_bound) == (0.0, 0, 0.0, 0.0)
    assert choice.blocks == 6 and choice.forecasts is prediction
    expected = float(((prediction - targets)[1:] ** 2).mean())
    assert choice.selection_mse == pytest.approx(expected, rel=1e-12)
    # min_blocks above the six blocks: nothing is judged, whatever the gain
    truth = diffuse_forecasts(prediction, graphs, 0.3, 1)
    assert choose_diffusion(prediction, truth, graphs, steps, mask, [0.3], [1]).step_size == 0.3
    assert choose_diffusion(prediction, truth, graphs, steps, mask, [0.3], [1], min_blocks=7).step_size == 0.0
    with pytest.raises(UnstableStepSizeError):
        diffuse_forecasts(prediction, graphs, 5.0, 1)
    with pytest.raises(UnstableStepSizeError):
        choose_diffusion(prediction, targets, graphs, steps, mask, [5.0], [1])
