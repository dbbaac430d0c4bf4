"""The report of ``pdenets run coin-forecast``: the setting, one table per dataset and protocol, figures.

Per dataset and protocol: the test errors of every model and of COIN over it (mean ± std over seeds),
what the diffusion chose on validation, the verdicts drawn with the results
(:mod:`pdenets.tasks.coin_forecast.results`: COIN against linear regression, COIN over each model against
the model), the error per horizon, the horizon-1 forecasts of the four largest regions and the region graph
coloured by where diffusion changes the forecasts (:mod:`pdenets.tasks.coin_forecast.figures` draws them).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ...data.paths import dataset_label
from ...data.temporal import TEMPORAL_DATASETS
from ...experiments.report import Report
from ...experiments.summary import PaperValue, Stats
from .config import CONVECTION_ALONE, LEARNED, CoinForecastConfig
from .figures import forecast_figure, graph_figure, horizon_figure
from .protocol import (
    ForecastData,
    ForecastSetup,
    diffuses_itself,
    diffusion_graph,
    protocol_windows,
    read_series,
)
from .results import COIN_OVER, ForecastCell, ForecastResults, is_coin

__all__ = ["add_sections", "PAPER_PYG"]

#: published figures of the PyTorch Geometric Temporal protocol, per dataset and model
PAPER_PYG = {
    ("chickenpox", "linear"): PaperValue(
        0.704, None, "PyTorch Geometric Temporal protocol, chickenpox: linear regression on the 4 lags"
    )
}
#: figures of PyTorch Geometric Temporal's own models, per dataset: what they are and how they were obtained
PEER_NOTES = {
    "chickenpox": "PyTorch Geometric Temporal's own GConvGRU (K = 1) trained by its documented loop "
    "(per-node loss, "
    "200 epochs, all 20 % training snapshots) reaches 0.733–0.738 over 3 seeds and its DCRNN "
    "0.724–0.750 (`python benchmarks/forecast.py --peer pyg-temporal`); the example scripts shipped in "
    "its repository subtract (N, 1) from (N,) predictions, train every county towards the week's mean "
    "and reach 1.02–1.09."
}


def add_sections(
    report: Report,
    config: CoinForecastConfig,
    results: ForecastResults,
    records: List[Dict[str, Any]],
    run_dir,
    *,
    models: Sequence[str],
) -> None:
    """Add the setting, then per dataset and protocol its table, verdicts and figures, to ``report``.

    The figures' names go into ``results.figures``.

    Args:
        report: the report to add to (started by the task's ``new_report``).
        config: the task's configuration.
        results: the task's summary (its table, verdicts and dataset sources).
        records: the stored records (their ``test_forecast`` is drawn, seed 0 of each model).
        run_dir: the run folder the figures are saved in.
        models: every model name in display order (those of ``config.models`` are shown).
    """
    sources = results.sources
    figures = results.figures
    report.paragraph(
        "The COIN paper's COVID-19 case data is not available offline; this runs its setting — a per-region "
        "temporal model (convection, shared weights) followed by diffusion of the forecasts on the region "
        "graph — on "
        "the offline series `england_covid` (daily cases, a mobility graph per day) and `chickenpox` "
        "(weekly, "
        f"standardized as stored). Our protocol: {config.lags} lags, horizons 1–{config.horizons}, the last "
        f"{config.test_fraction:.0%} of the days are the test period and the {config.val_fraction:.0%} "
        "before it "
        "validation (early stopping); every (origin, horizon) pair belongs to the split of its target day. "
        "COIN: "
        f"γ = {config.step_size}, r = {config.num_steps} on the graph without self-loops, rows normalized. "
        "Learned "
        f"models: width {config.hidden_features} (`hidden_features`), float32, Adam on mini-batches of whole "
        "origins "
        f"({config.batch_rows} windows; "
        f"lr {config.lr}, weight decay {config.weight_decay}), at most {config.epochs} passes, validation "
        "every "
        f"{config.eval_steps} steps and after every pass, early stopping after {config.patience} steps "
        "without a "
        f"better validation MSE; mean ± std over seeds {config.seeds} (the closed-form baselines are "
        "deterministic)."
    )
    order = [model for model in models if model in config.models]
    for dataset, protocols in results.table.items():
        for protocol, entries in protocols.items():
            report.heading(f"{dataset} — {protocol} protocol")
            raw = _table(report, dataset, protocol, entries, order)
            _concentration(report, entries, order)
            _verdict_paragraphs(report, results, f"{dataset}/{protocol}")
            if protocol == "ours":
                figures[f"{dataset}-horizons"] = horizon_figure(
                    _mae_by_horizon(entries, order, raw), dataset, run_dir, f"{dataset}-horizons.png"
                )
                report.figure(
                    figures[f"{dataset}-horizons"],
                    f"{dataset}: test MAE per horizon ({'cases per region' if raw else 'scaled units'}), "
                    "mean over seeds.",
                )
            forecast, graph = _series_figures(config, records, dataset, protocol, order, run_dir, sources)
            if forecast:
                figures[f"{dataset}-{protocol}-forecasts"] = forecast
                report.figure(
                    forecast,
                    f"{dataset} ({protocol}): horizon-1 forecasts over the test period for the "
                    "four regions with the most cases, truth in black (seed 0 of each model).",
                )
            if graph:
                figures[f"{dataset}-{protocol}-graph"] = graph
                report.figure(
                    graph,
                    f"{dataset} ({protocol}): the region graph (force-directed layout, no map); "
                    "colour = mean |COIN − convection alone| of the horizon-1 test forecasts "
                    "(seed 0), size = degree, edges = diffusion weights averaged over the days "
                    "(those above 0.02 where the graph varies). Where diffusion changes the "
                    "forecasts most.",
                )


def _fmt(stats: Optional[Stats], digits: int = 3) -> str:
    if stats is None:
        return "—"
    return f"{stats.mean:.{digits}f} ± {stats.std:.{digits}f}"


def _table(
    report: Report, dataset: str, protocol: str, entries: Dict[str, ForecastCell], order: List[str]
) -> bool:
    """The table of one dataset and protocol: each model, then COIN over it; whether it has raw-unit MAE."""
    raw = any(entry.errors.mae_raw is not None for entry in entries.values())
    headers = (
        ["model", "test MSE", "test MAE"]
        + (["MAE (cases per region)"] if raw else [])
        + (["paper / reference"] if protocol == "pyg-temporal" else [])
        + ["γ, r chosen on validation", "runs", "s per run"]
    )
    rows = []
    for model in [name for m in order for name in (m, f"{COIN_OVER}{m}")]:
        if model not in entries:
            continue
        entry = entries[model]
        name = f"↳ COIN over {entry.over}" if entry.over is not None else model
        row = [
            f"**{name}**" if is_coin(model, entry) else name,
            _fmt(entry.errors.mse),
            _fmt(entry.errors.mae),
        ]
        if raw:
            row.append(_fmt(entry.errors.mae_raw, 2))
        if protocol == "pyg-temporal":
            reference = PAPER_PYG.get((dataset, model))
            row.append(reference.format(3) if reference else "—")
        chosen = (
            ", ".join(f"{g:g}/{r}" if g else "0" for g, r in entry.chosen) if entry.chosen is not None else ""
        )
        rows.append(row + [chosen, entry.runs, f"{entry.seconds_per_run:.1f}"])
    caption = (
        "Scaled units (each region standardized on its training days; bursty counts after log(1 + y))"
        + ("; MAE in cases per region on the raw counts." if raw else ".")
        if protocol == "ours"
        else "MSE on the series as PyTorch Geometric Temporal's loader gives it."
        + (" " + PEER_NOTES[dataset] if dataset in PEER_NOTES else "")
    )
    report.table(headers, rows, caption=caption)
    return raw


def _mae_by_horizon(entries: Dict[str, ForecastCell], order: List[str], raw: bool) -> Dict[str, List[float]]:
    """The test MAE per horizon of the models in ``order`` that have it (in cases per region if ``raw``)."""
    errors = {model: entries[model].errors for model in order if model in entries}
    by_horizon = {
        model: error.mae_raw_by_horizon if raw else error.mae_by_horizon for model, error in errors.items()
    }
    return {model: values for model, values in by_horizon.items() if values is not None}


def _concentration(report: Report, entries: Dict[str, ForecastCell], order: List[str]) -> None:
    """Say so when a few regions hold most of the test error (bursts no training-period scale anticipates)."""
    shares = [entries[m].errors.top5_share.mean for m in order if m in entries]
    if shares and min(shares) > 0.5:
        report.paragraph(
            f"Five regions hold {100 * min(shares):.0f}–{100 * max(shares):.0f} % of every model's test "
            "squared error: "
            "series whose counts burst in the test period far beyond anything in the training days (Twitter "
            "mentions of a few users in a tournament's final days), which no scale taken from the training "
            "days "
            "anticipates. Compare models on this table with that in mind, or on the MAE."
        )


def _verdict_paragraphs(report: Report, results: ForecastResults, name: str) -> None:
    """COIN over each model against the model, and COIN against linear regression, in words."""
    check = results.diffusion_check.get(name)
    if check:
        worse = [m for m, c in check.over.items() if not c.coin_not_worse]
        report.paragraph(
            "COIN over a model diffuses its forecasts on the region graph with the (γ, r) whose gain in "
            "squared "
            "error over the model clears its noise on the selection days (the one-sided 95 % lower bound of "
            "the "
            "mean gain over blocks of H days is positive; validation days, or every day before the test "
            "period "
            "for the last value and the moving average, which read no target); otherwise, and whenever fewer "
            "than "
            "5 blocks of days can be judged, it keeps the model (γ = 0). "
            + (
                "It is not worse than its model on the test period for any model. "
                if not worse
                else f"On the test period it is worse than its model for {', '.join(worse)} (chosen before "
                "the test "
                "period, so this can happen). "
            )
            + f"Best COIN variant: {check.best_coin} ({check.best_coin_mse:.3f}); best other model: "
            f"{check.best_model} ({check.best_model_mse:.3f})."
        )
    verdict = results.coin_vs_linear.get(name)
    if verdict:
        report.paragraph(
            f"COIN {'beats' if verdict.coin_beats_linear else 'does not beat'} linear "
            f"regression here: MSE {verdict.coin_mse:.3f} ± {verdict.coin_std:.3f} vs "
            f"{verdict.linear_mse:.3f}" + (" (by more than one std)." if verdict.clearly else ".")
        )


def _series_for(
    config: CoinForecastConfig, dataset: str, protocol: str, sources: Dict[str, str]
) -> Optional[ForecastData]:
    """The series of a table's dataset and its protocol's scaling (the series as the runs read it, once per
    process); ``None`` where it cannot be read."""
    dataset = sources.get(dataset, dataset)
    setup = ForecastSetup.of(config) if protocol == "ours" else None
    try:
        return protocol_windows(read_series(dataset, config.data_dir), protocol, setup)
    except (OSError, ValueError):
        return None


def _seed_zero(
    records: List[Dict[str, Any]], dataset: str, protocol: str, model: str
) -> Optional[Dict[str, Any]]:
    found = [
        r
        for r in records
        if dataset_label(r["dataset"], TEMPORAL_DATASETS) == dataset
        and r["protocol"] == protocol
        and r["model"] == model
    ]
    found.sort(key=lambda r: r["seed"])
    return found[0] if found else None


def _diffused_and_convection(models: Iterable[str]) -> Optional[Tuple[str, str]]:
    """The first of ``models`` that diffuses itself (COIN's own forecaster) whose convection alone
    (:data:`~.config.CONVECTION_ALONE`) is among them too, and that convection; ``None`` without such a pair.
    """
    models = list(models)
    for model in models:
        if model in LEARNED and diffuses_itself(model) and CONVECTION_ALONE.get(model) in models:
            return model, CONVECTION_ALONE[model]
    return None


def _series_figures(
    config, records, dataset, protocol, order, run_dir, sources
) -> Tuple[Optional[str], Optional[str]]:
    """The forecasts figure and the graph figure of one dataset and protocol (the protocol prepared once)."""
    data = _series_for(config, dataset, protocol, sources)
    if data is None:
        return None, None
    series = data.series
    forecasts = {
        model: record["test_forecast"]
        for model in order
        if (record := _seed_zero(records, dataset, protocol, model)) and record["test_forecast"]["steps"]
    }
    forecast = forecast_figure(
        series, data.mean, data.std, forecasts, run_dir, f"{dataset}-{protocol}-forecasts.png"
    )
    pair = _diffused_and_convection(forecasts)
    if pair is None:
        return forecast, None
    diffused, convection = pair
    change = np.asarray(forecasts[diffused]["values"]) - np.asarray(forecasts[convection]["values"])
    change = np.abs(change * data.std.numpy()[None, :]).mean(0)
    steps = range(series.num_steps) if series.time_varying else [0]
    total = torch.zeros(series.num_nodes, series.num_nodes, dtype=torch.float64)
    for step in steps:
        total = total + diffusion_graph(series.graph_at(step), series.num_nodes).to_dense()
    mean_graph = total / len(steps)
    # the diffusion weights (rows sum to 1), averaged over the days
    dense = ((mean_graph + mean_graph.T) / 2).numpy()
    graph = graph_figure(
        dense,
        change,
        0.02 if series.time_varying else 0.0,
        run_dir,
        f"{dataset}-{protocol}-graph.png",
        title=f"{dataset}: where diffusion changes the forecasts",
        label="mean |COIN − convection| " + ("(counts)" if series.raw_counts else ""),
    )
    return forecast, graph
