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
from ...data.temporal import TEMPORAL_DATASETS, TEMPORAL_FACTS, TemporalGraphSeries
from ...experiments.report import Report, md_escape, plural_noun
from ...experiments.rundir import file_name_for
from ...experiments.summary import PaperValue, Stats, format_mean_std
from .config import CONVECTION_ALONE, LEARNED, UNFITTED, CoinForecastConfig
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

__all__ = ["add_sections", "add_forecasts_section", "PAPER_PYG"]

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
    facts = {dataset: _facts(config, dataset, results.sources) for dataset in results.table}
    _setting(report, config, results, facts)
    order = [model for model in models if model in config.models]
    for dataset, protocols in results.table.items():
        for protocol, entries in protocols.items():
            _protocol_section(
                report, config, results, records, run_dir, dataset, protocol, entries, order, facts[dataset]
            )


def _setting(
    report: Report, config: CoinForecastConfig, results: ForecastResults, facts: Dict[str, Any]
) -> None:
    """COIN's setting, the series and the protocol, in prose."""
    sources = results.sources
    described = [_describe(dataset, fact) for dataset, fact in facts.items()]
    builtin = [dataset for dataset in results.table if sources.get(dataset, dataset) in TEMPORAL_DATASETS]
    report.paragraph(
        "COIN's setting: a temporal model run on every node alone (convection, weights shared by the nodes), "
        "then diffusion of its forecasts over the graph of the nodes. The series: "
        + "; ".join(described)
        + "."
        + (
            " (The COIN paper's COVID-19 case data is not available offline; the built-in epidemic series "
            "stand in for it.)"
            if builtin
            else ""
        )
    )
    seeds = list(config.seeds)
    report.paragraph(
        f"Our protocol: {config.lags} lags, horizons 1–{config.horizons}; the last "
        f"{config.test_fraction:.0%} of the steps are the test period and the {config.val_fraction:.0%} "
        "before it validation (early stopping); every (origin, horizon) pair belongs to the split of its "
        f"target step. COIN: γ = {config.step_size}, r = {config.num_steps} on the graph without "
        f"self-loops, rows normalized. Learned models: width {config.hidden_features} (`hidden_features`), "
        f"float32, Adam on mini-batches of whole origins ({config.batch_rows} windows; lr {config.lr}, "
        f"weight decay {config.weight_decay}), at most {config.epochs} passes, validation every "
        f"{config.eval_steps} steps and after every pass, early stopping after {config.patience} steps "
        "without a better validation MSE; "
        + (
            f"mean ± std over the seeds {seeds}"
            if len(seeds) > 1
            else f"one seed ({seeds[0]}): no spread between seeds is measured"
        )
        + " (the closed-form baselines are deterministic)."
    )


def _protocol_section(
    report: Report,
    config: CoinForecastConfig,
    results: ForecastResults,
    records: List[Dict[str, Any]],
    run_dir,
    dataset: str,
    protocol: str,
    entries: Any,
    order: List[str],
    fact: Any,
) -> None:
    """One dataset under one protocol: its table, verdicts and figures."""
    sources, figures, seeds = results.sources, results.figures, list(config.seeds)
    series, unit, entity = fact
    label, unit_words, entities = md_escape(dataset), md_escape(plural(unit)), md_escape(plural_noun(entity))
    report.heading(f"{label} — {protocol} protocol")
    data = _series_for(config, dataset, protocol, sources)
    transform = data.transform if data is not None else None
    raw = _table(
        report,
        dataset,
        protocol,
        entries,
        order,
        transform=transform,
        entity=md_escape(entity),
        stored=series is not None and series.layout == "csv",
    )
    _concentration(report, entries, order, entities=entities, steps=unit_words)
    _verdict_paragraphs(report, results, f"{dataset}/{protocol}", steps=unit_words, seeds=len(seeds))
    _worse_in_mae(report, entries, order)
    if protocol == "ours":
        figures[f"{dataset}-horizons"] = horizon_figure(
            _mae_by_horizon(entries, order, raw), dataset, run_dir, file_name_for(dataset, "-horizons.png")
        )
        report.figure(
            figures[f"{dataset}-horizons"],
            f"{label}: test MAE per horizon (horizon h: h {unit_words} ahead; "
            f"{'in the series’ units' if raw else 'scaled units'}), "
            + ("mean over seeds." if len(seeds) > 1 else "one seed."),
        )
    forecast, graph = _series_figures(
        config, records, dataset, protocol, order, run_dir, sources, entity=entity, unit=unit
    )
    if forecast:
        figures[f"{dataset}-{protocol}-forecasts"] = forecast
        names = "named as in the file" if series is not None and series.node_names else "by index"
        report.figure(
            forecast,
            f"{label} ({protocol}): horizon-1 forecasts over the test period for the four "
            f"{entities} with the largest values ({names}), truth in black (seed {min(seeds)} of "
            "each model).",
        )
    if graph:
        figures[f"{dataset}-{protocol}-graph"] = graph
        report.figure(
            graph,
            f"{label} ({protocol}): the graph of the {entities} (force-directed layout, no map); "
            "colour = mean |COIN − convection alone| of the horizon-1 test forecasts (seed "
            f"{min(seeds)}), size = degree, edges = diffusion weights averaged over the "
            f"{unit_words} (those above 0.02 where the graph varies). Where diffusion changes the "
            "forecasts most.",
        )


def plural(unit: str) -> str:
    """The steps of a series in words: ``days``, ``weeks``; ``steps`` for a unit with a number
    (``5 minutes``) or none.

    Examples:
        >>> plural("day"), plural("5 minutes"), plural("step")
        ('days', 'steps', 'steps')
    """
    return "steps" if unit[:1].isdigit() or unit == "step" else plural_noun(unit)


def _facts(
    config: CoinForecastConfig, dataset: str, sources: Dict[str, str]
) -> Tuple[Optional[TemporalGraphSeries], str, str]:
    """A dataset's series (``None`` where it cannot be read), what one step is and what one node is, in the
    report's words: the configuration's ``time_unit`` / ``entity``, else the data's."""
    name = sources.get(dataset, dataset)
    try:
        series: Optional[TemporalGraphSeries] = read_series(name, config.data_dir)
    except (OSError, ValueError):
        series = None
    builtin_unit, builtin_entity = TEMPORAL_FACTS.get(name, (None, None))
    unit = config.time_unit or (series.step_unit if series is not None else builtin_unit) or "step"
    entity = config.entity or builtin_entity or "node"
    return series, unit, entity


def _describe(dataset: str, facts: Tuple[Optional[TemporalGraphSeries], str, str]) -> str:
    """One dataset in words: **name** — N entities over T units (the file's rows, their interval and first
    and last stamps where it has a time column), counts or values, one graph or one per step; every name from
    the file escaped."""
    series, unit, entity = facts
    label = f"**{md_escape(dataset)}**"
    if series is None:
        return label
    kind = "counts" if series.raw_counts else "values (not counts)"
    graphs = (
        f"a graph per {md_escape(unit) if not unit[:1].isdigit() else 'step'}"
        if series.time_varying
        else "one graph"
    )
    shown_names = ", ".join(md_escape(name) for name in series.node_names[:3])
    named = f" named {shown_names}, …" if len(series.node_names) > 3 else ""
    axis = series.time_axis
    if axis is not None:
        span = f"{md_escape(axis.span())} (column {md_escape(axis.column)})"
    else:
        length = f" of {md_escape(unit)}" if unit[:1].isdigit() else ""
        span = f"over {series.num_steps} {md_escape(plural(unit))}{length}"
    return f"{label} — {series.num_nodes} {md_escape(plural_noun(entity))}{named}, {span}, {kind}, {graphs}"


def _fmt(stats: Optional[Stats], digits: int = 3) -> str:
    """``mean ± std`` over the seeds; the mean alone for one seed (no spread is measured)."""
    return "—" if stats is None else stats.format(digits)


def _table(
    report: Report,
    dataset: str,
    protocol: str,
    entries: Dict[str, ForecastCell],
    order: List[str],
    *,
    transform: Optional[str],
    entity: str,
    stored: bool = False,
) -> bool:
    """The table of one dataset and protocol: each model, then COIN over it; whether it has raw-unit MAE.

    ``entity`` is already Markdown; ``stored``: the series comes from a user's CSV folder, for which no
    PyTorch Geometric Temporal loader exists (the ``pyg-temporal`` caption says what it then is)."""
    raw = any(entry.errors.mae_raw is not None for entry in entries.values())
    headers = (
        ["model", "test MSE", "test MAE"]
        + ([f"MAE (series’ units per {entity})"] if raw else [])
        + (["paper / reference"] if protocol == "pyg-temporal" else [])
        + ["γ, r chosen", "runs", "s per run"]
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
        if chosen and entry.over in UNFITTED:
            chosen += " †"
        rows.append(row + [chosen, entry.runs, f"{entry.seconds_per_run:.1f}"])
    scaled = f"Scaled units: each {entity} standardized on its training steps" + (
        ", after log(1 + y)" if transform == "log1p" else ""
    )
    caption = (
        scaled + ("; MAE also in the series’ own units (the raw counts)." if raw else ".")
        if protocol == "ours"
        else (
            "MSE on the values as stored (not scaled), split as PyTorch Geometric Temporal splits its "
            "datasets (the first 20 % of the snapshots for training, horizon 1): no loader of that library "
            "exists for a CSV folder, so this protocol has no published figures to compare with"
            if stored
            else "MSE on the series as PyTorch Geometric Temporal's loader gives it"
        )
        + (" (after log(1 + y))." if transform == "log1p" else ".")
        + (" " + PEER_NOTES[dataset] if dataset in PEER_NOTES else "")
    )
    caption += (
        " γ, r: chosen on the validation steps (0: the model kept); † on every step before the test period "
        "(a forecaster that reads no target)."
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


def _concentration(
    report: Report, entries: Dict[str, ForecastCell], order: List[str], *, entities: str, steps: str
) -> None:
    """Say so when a few nodes hold most of the test error (bursts no training-period scale anticipates);
    ``entities`` and ``steps``: the plural words, already Markdown."""
    shares = [entries[m].errors.top5_share.mean for m in order if m in entries]
    if shares and min(shares) > 0.5:
        report.paragraph(
            f"Five {entities} hold {100 * min(shares):.0f}–{100 * max(shares):.0f} % of every model's test "
            "squared error: series that burst in the test period far beyond anything in the training "
            f"{steps}, which no scale taken from the training period anticipates. Compare models on this "
            "table with that in mind, or on the MAE."
        )


def _worse_in_mae(report: Report, entries: Dict[str, ForecastCell], order: List[str]) -> None:
    """Say so where COIN over a model lowers its MSE (what it is chosen on) but raises its MAE."""
    worse = []
    for model in order:
        coin = entries.get(f"{COIN_OVER}{model}")
        if model in entries and coin is not None:
            before, after = entries[model].errors.mae.mean, coin.errors.mae.mean
            if after > before * 1.001:
                worse.append(f"{model} (+{100 * (after / before - 1):.1f} %)")
    if worse:
        report.paragraph(
            "COIN is chosen on the squared error; over " + ", ".join(worse) + " it raises the test MAE: "
            "diffusion pulls large errors down and spreads small ones."
        )


def _verdict_paragraphs(
    report: Report, results: ForecastResults, name: str, *, steps: str, seeds: int
) -> None:
    """COIN over each model against the model, and COIN against linear regression, in words (``steps``: the
    plural of the series' step, already Markdown)."""
    check = results.diffusion_check.get(name)
    if check:
        worse = [m for m, c in check.over.items() if not c.coin_not_worse]
        report.paragraph(
            "COIN over a model diffuses its forecasts on the graph with the (γ, r) whose gain in squared "
            f"error over the model clears its noise on the selection {steps} (the one-sided 95 % lower "
            f"bound of the mean gain over blocks of H {steps} is positive; the validation {steps}, or every "
            "step before the test period for the forecasters that read no target); otherwise, and whenever "
            f"fewer than 5 blocks of {steps} can be judged, it keeps the model (γ = 0). "
            + (
                "It is not worse than its model on the test period for any model. "
                if not worse
                else f"On the test period it is worse than its model for {', '.join(worse)} (chosen before "
                "the test period, so this can happen). "
            )
            + f"Best COIN variant: {check.best_coin} ({check.best_coin_mse:.3f}); best other model: "
            f"{check.best_model} ({check.best_model_mse:.3f})."
        )
    verdict = results.coin_vs_linear.get(name)
    if verdict:
        coin = format_mean_std(verdict.coin_mse, verdict.coin_std if seeds > 1 else None)
        report.paragraph(
            f"COIN {'beats' if verdict.coin_beats_linear else 'does not beat'} linear "
            f"regression here: MSE {coin} vs "
            f"{verdict.linear_mse:.3f}"
            + (" (by more than one std over seeds)." if verdict.clearly and seeds > 1 else ".")
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
    config: CoinForecastConfig,
    records: List[Dict[str, Any]],
    dataset: str,
    protocol: str,
    order: List[str],
    run_dir: Any,
    sources: Dict[str, str],
    *,
    entity: str,
    unit: str,
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
        series,
        data.mean,
        data.std,
        forecasts,
        run_dir,
        file_name_for(dataset, f"-{protocol}-forecasts.png"),
        entity=entity,
        unit=unit,
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
    # the diffusion weights (rows sum to 1), averaged over the steps
    dense = ((mean_graph + mean_graph.T) / 2).numpy()
    graph = graph_figure(
        dense,
        change,
        0.02 if series.time_varying else 0.0,
        run_dir,
        file_name_for(dataset, f"-{protocol}-graph.png"),
        title=f"{dataset}: where diffusion changes the forecasts",
        label="mean |COIN − convection| " + ("(counts)" if series.raw_counts else ""),
    )
    return forecast, graph


def add_forecasts_section(report: Report, written: Sequence[Dict[str, Any]]) -> None:
    """The forecasts past each series' end written beside the report; nothing where none was written."""
    if not written:
        return
    report.heading("Forecasts past the end of the series")
    rows = [
        [
            md_escape(entry["dataset"]),
            f"`{entry['file']}`",
            ", ".join(md_escape(model) for model in entry["models"]),
            f"{entry['nodes']:,}",
            f"{entry['horizons']} ({md_escape(entry['first'])} to {md_escape(entry['last'])})",
            f"γ = {entry['step_size']:g}, r = {entry['num_steps']}",
            f"`{entry['model_folder']}/`" if entry.get("model_folder") else "",
        ]
        for entry in written
    ]
    report.table(
        ["series", "file", "columns", "nodes", "steps after the end", "COIN's diffusion", "saved model"],
        rows,
        align="lllrlll",
        caption="One row per node and step after the last one, at the series' own interval, in its units. "
        "The COIN variant is the one with the lowest test MSE of this run (our protocol), its model trained "
        "again with the first seed; COIN diffuses that model's forecast with the (γ, r) chosen for it in "
        "the run (γ = 0: the model's forecast kept). The saved model forecasts past the end of a longer "
        "series of the same sensors and interval: `pdenets predict RUN_DIR --dataset LONGER_SERIES --out "
        "forecasts-later.csv`.",
    )
