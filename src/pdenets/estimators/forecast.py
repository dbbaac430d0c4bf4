"""COIN forecasting of a region series as an estimator: ``fit(series)``, ``predict(horizon)`` (the steps after
the series' end), ``save``/``load`` (the coin-forecast task's models).

A thin scikit-learn face of the task's model (:mod:`pdenets.tasks.coin_forecast.model`): ``fit`` runs the
task's protocol on the series (windows of ``lags`` steps, horizons ``1…H``; the last
``test_fraction`` of the steps held out and measured, the ``val_fraction`` before them for early stopping
and for choosing COIN's ``(γ, r)``): the forecaster ``model`` is fitted, then COIN's diffusion of its
forecasts on the series' graph is chosen where the validation days show a gain. ``predict`` forecasts the
``H`` steps after the end of the fitted series, or of a longer one of the same nodes and interval, in the
series' units. A model kept by a run (``RUN_DIR/model-<name>``) loads here; one saved here answers
``pdenets predict``.

Examples:
    >>> import numpy as np, torch
    >>> from pdenets.data.temporal import TemporalGraphSeries
    >>> from pdenets.estimators import COINForecaster
    >>> steps = np.arange(200)
    >>> values = torch.tensor(10 + np.sin(steps / 5)[:, None] + 0.1 * np.arange(3), dtype=torch.float64)
    >>> ring = torch.tensor([[0, 1, 2, 1, 2, 0], [1, 2, 0, 0, 1, 2]])
    >>> series = TemporalGraphSeries("waves", values, [(ring, None)], raw_counts=False, source="example")
    >>> forecaster = COINForecaster("linear", lags=6, horizons=3).fit(series)
    >>> forecaster.predict().shape                         # 3 nodes, the 3 steps after the end
    (3, 3)
    >>> expected = 10 + np.sin(np.arange(200, 203) / 5)
    >>> bool(np.abs(forecaster.predict()[0] - expected).max() < 0.05)
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..data.temporal import TemporalGraphSeries, load_temporal
from ..models.forecasting import FORECASTERS
from ..saved_model import estimator_from
from ..tasks.coin_forecast.config import BASELINES, CoinForecastConfig
from ..tasks.coin_forecast.model import DiffusionGrid, ForecastModel, ForecastTraining, fit_forecaster
from ..tasks.coin_forecast.protocol import ForecastSetup, diffuses_itself, forecast_metrics, prepare_protocol

__all__ = ["COINForecaster"]

_DEFAULTS = CoinForecastConfig()


class COINForecaster(BaseEstimator):
    """A forecaster of a region series and COIN's diffusion of its forecasts on the series' graph.

    Args:
        model: a forecaster of ``pdenets list forecasters``: the closed forms ``linear`` (default),
            ``last-value``, ``moving-average``, or a learned one (``window-mlp``, ``coin-forecast``,
            ``window-gcn``, ``cheb-gru``, ``pygt-gconv-gru``).
        lags: past steps per node (default: 7).
        horizons: ``H``, the steps forecast (default: 7).
        test_fraction: the last steps held out and measured (``test_mse_``; default: 0.2).
        val_fraction: the steps before them, for early stopping and COIN's choice (default: 0.1).
        transform: ``auto``, ``log1p`` (count series) or ``none``.
        step_sizes: COIN's candidate ``γ`` (default: the task's grid).
        num_steps: COIN's candidate ``r`` (default: the task's grid).
        training: a learned model's training settings by name over the task's (``epochs``, ``lr``,
            ``hidden_features``, …).
        random_state: the seed of a learned model's training (default: 0).

    Attributes:
        node_names_: the nodes, in the order of the rows of :meth:`predict`.
        step_size_, num_steps_: COIN's chosen ``(γ, r)`` (``γ = 0``: the model's forecast kept).
        test_mse_: the test MSE (scaled units, horizons averaged) of COIN over the model, and
            ``model_test_mse_`` of the model alone.
        model_: the fitted :class:`~pdenets.tasks.coin_forecast.model.ForecastModel`.
    """

    def __init__(
        self,
        model: str = "linear",
        *,
        lags: int = _DEFAULTS.lags,
        horizons: int = _DEFAULTS.horizons,
        test_fraction: float = _DEFAULTS.test_fraction,
        val_fraction: float = _DEFAULTS.val_fraction,
        transform: str = "auto",
        step_sizes: Optional[Sequence[float]] = None,
        num_steps: Optional[Sequence[int]] = None,
        training: Optional[Dict[str, Any]] = None,
        random_state: int = 0,
    ):
        self.model = model
        self.lags = lags
        self.horizons = horizons
        self.test_fraction = test_fraction
        self.val_fraction = val_fraction
        self.transform = transform
        self.step_sizes = step_sizes
        self.num_steps = num_steps
        self.training = training
        self.random_state = random_state

    def _training(self) -> Optional[ForecastTraining]:
        """A learned model's training settings (the task's, ``training`` over them); ``None`` for a closed
        form."""
        if self.model not in FORECASTERS:
            raise ValueError(f"model must be one of {', '.join(FORECASTERS)}, got {self.model!r}")
        defaults = {name: getattr(_DEFAULTS, name) for name in ForecastTraining.__dataclass_fields__}
        given = dict(self.training or {})
        unknown = sorted(set(given) - set(defaults))
        if unknown:
            raise ValueError(
                f"training: unknown {', '.join(map(repr, unknown))}; known: {', '.join(defaults)}"
            )
        training = ForecastTraining(**{**defaults, **given})
        return None if self.model in BASELINES else training

    @staticmethod
    def _series(series: Union[str, Path, TemporalGraphSeries]) -> TemporalGraphSeries:
        if isinstance(series, TemporalGraphSeries):
            return series
        if isinstance(series, (str, Path)):
            return load_temporal(str(series))
        raise TypeError(
            "series must be a TemporalGraphSeries or the path of a series (a CSV folder, a .json file); got "
            f"{type(series).__name__}"
        )

    def fit(self, series: Union[str, Path, TemporalGraphSeries]) -> "COINForecaster":
        """Fit the forecaster and choose COIN's diffusion over it on ``series`` (module docstring)."""
        training = self._training()
        series = self._series(series)
        setup = ForecastSetup(self.lags, self.horizons, self.test_fraction, self.val_fraction, self.transform)
        data = prepare_protocol(series, "ours", setup)
        grid = DiffusionGrid(
            tuple(sorted(set(self.step_sizes or _DEFAULTS.diffusion_step_sizes))),
            tuple(sorted(set(self.num_steps or _DEFAULTS.diffusion_num_steps))),
        )
        self.model_ = fit_forecaster(
            data,
            self.model,
            seed=int(self.random_state),
            training=training,
            grid=None if diffuses_itself(self.model) else grid,
            about={"params": self.get_params(), "dataset": series.name},
        )
        choice = self.model_.choice
        assert self.model_.prediction is not None
        self.step_size_, self.num_steps_ = self.model_.step_size, self.model_.num_steps
        self.model_test_mse_ = float(forecast_metrics(self.model_.prediction, data)["mse"])
        diffused = choice.forecasts if choice is not None else self.model_.prediction
        self.test_mse_ = float(forecast_metrics(diffused, data)["mse"])
        self.series_ = series
        self.node_names_ = list(self.model_.node_names)
        return self

    def _forecast(self, series: Optional[Union[str, Path, TemporalGraphSeries]]):
        check_is_fitted(self, "model_")
        if series is None:
            if not hasattr(self, "series_"):
                raise ValueError("a loaded forecaster has no series of its own: give the series to forecast")
            return self.model_.forecast(self.series_, "the fitted series")
        name = str(series) if isinstance(series, (str, Path)) else series.name
        return self.model_.forecast(self._series(series), name)

    def predict(
        self,
        horizon: Optional[int] = None,
        *,
        series: Optional[Union[str, Path, TemporalGraphSeries]] = None,
        diffused: bool = True,
    ) -> np.ndarray:
        """``(N, horizon)`` forecasts of the steps after the end of ``series`` (default: the fitted one), in
        its units, rows in the order of ``node_names_``; COIN's (``diffused``, default) or the model's alone.

        Args:
            horizon: the steps to forecast, ``1…H`` (default: ``H``).
            series: a series of the same nodes and interval, e.g. the fitted one grown by new steps.
            diffused: COIN's forecast (default) or the model's.
        """
        check_is_fitted(self, "model_")
        horizons = self.model_.horizons
        horizon = horizons if horizon is None else horizon
        if not isinstance(horizon, (int, np.integer)) or not 1 <= horizon <= horizons:
            raise ValueError(
                f"horizon must be 1…{horizons} (the horizons it was fitted for), got {horizon!r}"
            )
        forecast = self._forecast(series)
        model = self.model_.model
        column = forecast.columns[f"coin over {model}" if diffused else model]
        return column[:, :horizon].numpy()

    def forecast_stamps(self, series: Optional[Union[str, Path, TemporalGraphSeries]] = None) -> List[str]:
        """The time stamps of the ``H`` steps after the end of ``series`` (default: the fitted one)."""
        return self._forecast(series).stamps

    def save(self, folder: Union[str, Path]) -> Path:
        """Keep the fitted forecaster in ``folder`` (the files of a run's ``model-<name>/``)."""
        check_is_fitted(self, "model_")
        return self.model_.save(folder)

    @classmethod
    def load(cls, folder: Union[str, Path]) -> "COINForecaster":
        """A forecaster kept by :meth:`save` or by a coin-forecast run, checked; ``predict`` then needs a
        series.

        Raises:
            SavedModelError: an altered, truncated or foreign model, naming the file.
        """
        model = ForecastModel.load(folder)
        params = model.about.get("params")
        if not isinstance(params, dict):  # a run's model
            params = {"model": model.model, "lags": model.lags, "horizons": model.horizons}
            if model.training is not None:
                params["training"] = dict(vars(model.training))
        forecaster = estimator_from(cls, params, Path(folder) / "model.json")
        forecaster.model_ = model
        forecaster.node_names_ = list(model.node_names)
        forecaster.step_size_, forecaster.num_steps_ = model.step_size, model.num_steps
        return forecaster
