"""The settings of ``pdenets run coin-forecast``: the forecasters compared, the protocols, the training and
the diffusion grid (the task, its report and its checks read them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from ...data.temporal import TEMPORAL_DATASETS
from ...experiments.config import ConfigError, TaskConfig, check_fields, setting
from ...models.forecasting import FORECASTERS
from .protocol import CLOSED_FORM, PROTOCOLS, TRANSFORMS, learned_forecasters

__all__ = ["CoinForecastConfig", "BASELINES", "LEARNED", "UNFITTED", "CONVECTION_ALONE", "RENAMED"]

BASELINES = CLOSED_FORM
LEARNED = learned_forecasters()
#: forecasts that read no target (as each declares): COIN over them may select on every target before the test
#: period
UNFITTED = tuple(name for name, entry in FORECASTERS.items() if not entry.fits_targets)
#: each forecaster that diffuses itself (COIN's own: :func:`~.protocol.diffuses_itself`) → the convection
#: alone whose forecasts it diffuses, as it declares: the pair the report's graph figure compares
CONVECTION_ALONE = {name: entry.convection for name, entry in FORECASTERS.items() if entry.convection}
#: names that changed, with what they are now
RENAMED = {
    "gconv-gru": "gconv-gru was renamed cheb-gru (our GRU over the lags with K = 2 Chebyshev gates and early "
    "stopping); pygt-gconv-gru is PyTorch Geometric Temporal's GConvGRU as its documentation trains it"
}


@dataclass
class CoinForecastConfig(TaskConfig):
    """Configuration of ``pdenets run coin-forecast``."""

    datasets: List[str] = setting(
        ["chickenpox", "england_covid"],
        "england_covid, chickenpox, a PyTorch Geometric Temporal .json file or a CSV folder (series.csv + "
        "edges.csv)",
    )
    protocols: List[str] = setting(
        ["auto"],
        "auto (per dataset: ours and pyg-temporal for the built-in series and PyTorch Geometric Temporal "
        ".json files, ours for a CSV folder), or ours (horizons 1..H) and/or pyg-temporal",
    )
    models: List[str] = setting(list(BASELINES + LEARNED), "forecasters: " + ", ".join(BASELINES + LEARNED))
    seeds: List[int] = setting([0, 1, 2], "seeds of the learned models (the closed-form ones need one)")
    lags: int = setting(7, "past values per node (ours)")
    horizons: int = setting(7, "forecast horizons 1..H (ours)")
    test_fraction: float = setting(0.2, "last fraction of the steps (rows) that are the test period (ours)")
    val_fraction: float = setting(
        0.1, "fraction of the steps before the test period used for early stopping (ours)"
    )
    count_transform: str = setting(
        "auto",
        "ours: transform of count series before standardizing: auto (log1p where "
        "the series' own loader takes it: Twitter tennis), log1p or none",
    )
    hidden_features: int = setting(32, "width of the learned models", renamed_from=("hidden",))
    batch_rows: int = setting(2048, "(origin, node) windows per Adam step; whole origins, at least one")
    eval_steps: int = setting(
        50, "validate every this many steps, and at the end of every pass over the training origins"
    )
    step_size: float = setting(
        0.1, "gamma of COIN's diffusion steps (the start value when learned; stable up to 1)"
    )
    learn_step_size: bool = setting(True, "learn COIN's gamma in (0, 1) with the weights")
    num_steps: int = setting(2, "r, COIN's diffusion steps")
    epochs: int = setting(300, "most passes over the training origins (epochs)")
    patience: int = setting(150, "steps without a better validation MSE before early stopping")
    min_improvement: float = setting(
        5e-3,
        "relative decrease of the validation MSE that counts as better for the "
        "patience (the best model is kept whatever the margin)",
    )
    lr: float = setting(0.01, "Adam learning rate")
    weight_decay: float = setting(1e-4, "Adam weight decay")
    diffusion_step_sizes: List[float] = setting(
        [0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0],
        "gammas tried for COIN over every model (0 keeps the model itself)",
    )
    diffusion_num_steps: List[int] = setting(
        [1, 2, 3, 5], "numbers of diffusion steps r tried for COIN over every model"
    )
    forecasts: str = setting(
        "auto",
        "forecasts.csv: the H steps after the series' end per node, by the best COIN variant and its model: "
        "auto (for series of your files), always, or never",
    )
    time_unit: Optional[str] = setting(
        None,
        "what one step of the series is, in the report's words, e.g. '5 minutes' (default: from the data: a "
        "CSV time column's interval or name, the built-in series' own unit, else 'step')",
    )
    entity: Optional[str] = setting(
        None,
        "what one node of the series is, in the report's words, e.g. sensor (default: the built-in series' "
        "own word, else node)",
    )

    def validate(self) -> None:
        super().validate()
        for old in set(self.models) & set(RENAMED):
            raise ConfigError(RENAMED[old])
        check_fields(
            self,
            non_empty=("datasets", "protocols", "models", "seeds"),
            choices={
                "protocols": PROTOCOLS + ("auto",),
                "models": BASELINES + LEARNED,
                "count_transform": TRANSFORMS,
                "forecasts": ("auto", "always", "never"),
            },
            counts=("lags", "horizons", "hidden_features", "batch_rows", "eval_steps", "epochs", "patience"),
            non_negative_counts=("num_steps", "seeds"),
            positive=("step_size", "lr", "test_fraction", "val_fraction"),
            non_negative=("weight_decay", "min_improvement"),
        )
        if not self.diffusion_step_sizes or any(not 0 <= g <= 1 for g in self.diffusion_step_sizes):
            raise ConfigError(
                f"diffusion_step_sizes must be values in [0, 1] (the stability bound of a "
                f"row-normalized graph), got {self.diffusion_step_sizes}"
            )
        if not self.diffusion_num_steps or any(
            isinstance(r, bool) or not isinstance(r, int) or r < 1 for r in self.diffusion_num_steps
        ):
            raise ConfigError(
                f"diffusion_num_steps must be positive integers, got {self.diffusion_num_steps}"
            )
        if "auto" in self.protocols and len(self.protocols) > 1:
            raise ConfigError(
                f"protocols: auto chooses the protocols of each dataset; give it alone, got {self.protocols}"
            )
        if self.min_improvement >= 1:
            raise ConfigError(f"min_improvement is a relative decrease below 1, got {self.min_improvement}")
        for dataset in self.datasets:
            if (
                dataset not in TEMPORAL_DATASETS
                and not dataset.lower().endswith((".json", ".csv"))
                and not Path(dataset).expanduser().is_dir()
            ):
                raise ConfigError(
                    f"datasets: {dataset!r} is neither england_covid, chickenpox, a .json file nor a CSV "
                    "folder (series.csv + edges.csv)"
                )
        if self.step_size > 1 or (self.learn_step_size and self.step_size >= 1):
            raise ConfigError(
                f"step_size must be <= 1 on a row-normalized graph (< 1 when learned), got {self.step_size}"
            )
        if self.test_fraction + self.val_fraction >= 0.9:
            raise ConfigError(
                "test_fraction + val_fraction must leave at least 10 % of the steps for training"
            )
