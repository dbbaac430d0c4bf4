"""The coin-forecast report built from hand-made results: each model then COIN over it in the table, the
verdicts and warnings at their thresholds, the reference and raw-unit columns, escaped names, figures."""

import json

import numpy as np

from pdenets.experiments.plots import plt
from pdenets.experiments.report import Report
from pdenets.experiments.rundir import RunDirectory
from pdenets.tasks.coin_forecast.config import CoinForecastConfig
from pdenets.tasks.coin_forecast.report import add_forecasts_section, add_sections, plural
from pdenets.tasks.coin_forecast.results import (
    ForecastCell,
    ForecastErrors,
    ForecastResults,
    coin_vs_linear,
    diffusion_checks,
)

MISSING = "/nonexistent/toy.json"  # a series that cannot be read: no description, no series figures
ORDER = ["last-value", "linear", "coin-forecast", "window-mlp"]


def _cell(mse, mae, *, top5=0.3, over=None, chosen=None, raw=None):
    """One table entry over the seeds of ``mse`` (and ``mae``, ``raw``: one value per seed)."""
    metrics = []
    for k, (m, a) in enumerate(zip(mse, mae)):
        seed = dict(mse=m, mae=a, top5_share=top5, mae_by_horizon=[a, 2 * a], mse_by_horizon=[m, m])
        if raw is not None:
            seed.update(mae_raw=raw[k], mae_raw_by_horizon=[raw[k], raw[k]])
        metrics.append(seed)
    errors = ForecastErrors.of(metrics)
    return ForecastCell(runs=len(mse), seconds_per_run=1.5, over=over, chosen=chosen, errors=errors)


class Unwritten(RunDirectory):
    """A run folder that names the figures it is given without drawing them to a file."""

    def save_figure(self, figure, name, **_):
        plt.close(figure)
        return name


def _markdown(tmp_path, table, *, sources=None, records=(), written=False, **settings):
    values = dict(datasets=[MISSING], models=["last-value", "linear", "coin-forecast"], seeds=[0, 1])
    values.update(settings)
    results = ForecastResults(
        table=table,
        sources=sources or {label: MISSING for label in table},
        coin_vs_linear=coin_vs_linear(table),
        diffusion_check=diffusion_checks(table),
    )
    report = Report("forecast")
    run_dir = (RunDirectory if written else Unwritten)(tmp_path / "run")
    add_sections(report, CoinForecastConfig(**values), results, list(records), run_dir, models=ORDER)
    return report.markdown(), results


def _rows(text):
    """The body rows of every table (no header, no rule)."""
    lines = text.splitlines()
    headers = {k - 1 for k, line in enumerate(lines) if line.startswith("|---")}
    return [line for k, line in enumerate(lines) if line.startswith("| ") and k not in headers]


def test_each_model_is_followed_by_coin_over_it_with_the_diffusion_it_chose(tmp_path):
    table = {
        "toy": {
            "ours": {
                "last-value": _cell([1.0], [0.8]),
                "coin-over-last-value": _cell([0.9], [0.8], over="last-value", chosen=[(0.3, 2)]),
                "linear": _cell([0.5], [0.4]),
                "coin-over-linear": _cell([0.45], [0.4], over="linear", chosen=[(0.0, 1), (0.05, 3)]),
                "coin-forecast": _cell([0.4, 0.6], [0.3, 0.5]),
                "window-mlp": _cell([0.1], [0.1]),  # not among the configured models: not shown
            }
        }
    }
    text, results = _markdown(tmp_path, table, written=True)
    assert _rows(text) == [
        "| last-value | 1.000 | 0.800 |  | 1 | 1.5 |",
        "| **↳ COIN over last-value** | 0.900 | 0.800 | 0.3/2 † | 1 | 1.5 |",  # † reads no target
        "| linear | 0.500 | 0.400 |  | 1 | 1.5 |",
        "| **↳ COIN over linear** | 0.450 | 0.400 | 0, 0.05/3 | 1 | 1.5 |",
        "| **coin-forecast** | 0.500 ± 0.100 | 0.400 ± 0.100 |  | 2 | 1.5 |",  # population std of 0.4, 0.6
    ]
    assert "## toy — ours protocol" in text and "pyg-temporal" not in text
    assert "mean ± std over the seeds [0, 1]" in text
    # the best COIN variant and the best other model, from the means
    assert "Best COIN variant: coin-over-linear (0.450); best other model: window-mlp (0.100)." in text
    assert "not worse than its model on the test period for any model" in text
    assert results.figures == {"toy-horizons": "toy-horizons.png"}
    assert (tmp_path / "run" / "toy-horizons.png").stat().st_size > 1000
    assert "*toy: test MAE per horizon (horizon h: h steps ahead; scaled units), mean over seeds.*" in text


def test_the_verdict_against_linear_regression_says_clearly_only_beyond_one_std(tmp_path):
    def verdict(coin_mse, seeds):
        models = {"linear": _cell([0.5], [0.4]), "coin-forecast": _cell(coin_mse, [0.3] * 2)}
        text, _ = _markdown(tmp_path / f"{coin_mse}{seeds}", {"toy": {"pyg-temporal": models}}, seeds=seeds)
        return next(line for line in text.splitlines() if line.startswith(("COIN beats", "COIN does not")))

    # mean 0.35, std 0.05: 0.40 < 0.5, by more than one std
    assert verdict([0.3, 0.4], [0, 1]) == (
        "COIN beats linear regression here: MSE 0.350 ± 0.050 vs 0.500 (by more than one std over seeds)."
    )
    # mean 0.45, std 0.1: below linear regression, but within one std
    assert verdict([0.35, 0.55], [0, 1]) == "COIN beats linear regression here: MSE 0.450 ± 0.100 vs 0.500."
    assert verdict([0.6, 0.6], [0, 1]).startswith("COIN does not beat linear regression here: MSE 0.600")
    # one seed: no spread, no claim about it
    assert verdict([0.3, 0.4], [0]) == "COIN beats linear regression here: MSE 0.350 vs 0.500."


def test_a_higher_mae_under_coin_is_said_beyond_a_tenth_of_a_percent(tmp_path):
    def paragraph(after):
        table = {
            "toy": {
                "pyg-temporal": {
                    "linear": _cell([1.0], [2.0]),
                    "coin-over-linear": _cell([0.9], [after], over="linear", chosen=[(0.1, 1)]),
                }
            }
        }
        text, _ = _markdown(tmp_path / str(after), table)
        return [line for line in text.splitlines() if line.startswith("COIN is chosen on the squared error")]

    assert paragraph(2.002) == []  # 2.002 / 2 = 1.001: not more than the tolerance
    assert paragraph(2.1) == [
        "COIN is chosen on the squared error; over linear (+5.0 %) it raises the test MAE: diffusion pulls "
        "large errors down and spreads small ones."
    ]


def test_five_nodes_holding_most_of_the_error_is_said_only_above_half(tmp_path):
    def paragraph(shares, entity=None):
        models = {
            "last-value": _cell([1.0], [1.0], top5=shares[0]),
            "linear": _cell([1.0], [1.0], top5=shares[1]),
        }
        settings = {"entity": entity} if entity else {}
        text, _ = _markdown(tmp_path / f"{shares}{entity}", {"toy": {"pyg-temporal": models}}, **settings)
        return [line for line in text.splitlines() if line.startswith("Five ")]

    assert paragraph((0.5, 0.9)) == []  # the smallest share decides: exactly one half is not most
    (line,) = paragraph((0.62, 0.88), entity="county")
    assert line.startswith("Five counties hold 62–88 % of every model's test squared error")
    assert "the training steps" in line


def test_the_pyg_temporal_table_shows_the_published_figure_and_the_raw_unit_error(tmp_path):
    table = {
        "chickenpox": {
            "pyg-temporal": {
                "last-value": _cell([1.2], [0.9], raw=[12.345]),
                "linear": _cell([0.71], [0.6], raw=[8.0]),
            }
        }
    }
    text, results = _markdown(tmp_path, table)
    header = next(line for line in text.splitlines() if line.startswith("| model"))
    assert header == (
        "| model | test MSE | test MAE | MAE (series’ units per node) | paper / reference | γ, r chosen "
        "| runs | s per run |"
    )
    assert _rows(text) == [
        "| last-value | 1.200 | 0.900 | 12.35 | — |  | 1 | 1.5 |",  # raw MAE with two decimals
        "| linear | 0.710 | 0.600 | 8.00 | 0.704 |  | 1 | 1.5 |",  # the library's quoted figure
    ]
    assert "GConvGRU" in text  # the note on that library's own models for chickenpox
    assert results.figures == {}  # per-horizon figures belong to our protocol


def test_names_from_the_users_files_are_escaped(tmp_path):
    label = "<b>ring</b>|[x](javascript:y)"
    table = {label: {"ours": {"linear": _cell([1.0], [1.0])}}}
    text, results = _markdown(tmp_path, table, entity="<i>sensor")
    assert "## &lt;b&gt;ring&lt;/b&gt;\\|\\[x\\]\\(javascript:y\\) — ours protocol" in text
    assert "<b>" not in text and "<i>" not in text and "](javascript" not in text
    assert "MAE (series" not in text and "each &lt;i&gt;sensor standardized" in text
    (figure,) = results.figures.values()
    assert figure.endswith("-horizons.png") and "<" not in figure and "/" not in figure
    assert plural("5 minutes") == "steps" and plural("week") == "weeks" and plural("step") == "steps"


def test_a_readable_series_is_described_and_its_forecasts_and_graph_drawn(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "toy.json"
    values = rng.normal(size=(40, 3)).round(3) + 0.5
    path.write_text(json.dumps({"FX": values.tolist(), "edges": [[0, 1], [1, 0], [1, 2], [2, 1]]}))
    settings = dict(
        datasets=[str(path)], models=["window-mlp", "coin-forecast"], seeds=[0], lags=4, horizons=2
    )
    steps = list(range(32, 40))
    records = [
        {
            "dataset": str(path),
            "protocol": "ours",
            "model": model,
            "seed": 0,
            "test_forecast": {"steps": steps, "values": (rng.normal(size=(8, 3)) * scale).tolist()},
        }
        for model, scale in (("window-mlp", 1.0), ("coin-forecast", 0.5))
    ]
    table = {"toy": {"ours": {"window-mlp": _cell([1.0], [1.0]), "coin-forecast": _cell([0.9], [0.9])}}}
    text, results = _markdown(tmp_path, table, sources={"toy": str(path)}, records=records, **settings)
    assert "The series: **toy** — 3 nodes, over 40 steps, values (not counts), one graph." in text
    assert "one seed (0): no spread between seeds is measured" in text
    assert "The COIN paper's COVID-19" not in text  # said of the built-in series only
    assert results.figures == {
        "toy-horizons": "toy-horizons.png",
        "toy-ours-forecasts": "toy-ours-forecasts.png",
        "toy-ours-graph": "toy-ours-graph.png",
    }
    assert "for the four nodes with the largest values (by index)" in text
    assert "*toy: test MAE per horizon (horizon h: h steps ahead; scaled units), one seed.*" in text


def test_the_forecasts_section_lists_each_file_and_is_left_out_without_one():
    report = Report("forecast")
    add_forecasts_section(report, [])
    assert report.markdown() == "# forecast\n"
    entry = dict(
        dataset="ring_road<b>",
        file="forecasts.csv",
        models=["linear", "coin over linear"],
        nodes=12345,
        horizons=3,
        first="2026-03-03 00:00",
        last="2026-03-03 00:10",
        step_size=0.25,
        num_steps=2,
        model_folder="model-linear",
    )
    add_forecasts_section(report, [entry, dict(entry, model_folder="", step_size=0.0)])
    rows = _rows(report.markdown())
    assert rows[0] == (
        "| ring_road&lt;b&gt; | `forecasts.csv` | linear, coin over linear | 12,345 | 3 (2026-03-03 00:00 to "
        "2026-03-03 00:10) | γ = 0.25, r = 2 | `model-linear/` |"
    )
    assert rows[1].endswith("| γ = 0, r = 2 |  |")
    assert "## Forecasts past the end of the series" in report.markdown()
