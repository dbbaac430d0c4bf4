"""The settings of ``pdenets run coin-claims``: the configuration dataclass and what it names (the task, its
report and its checks read them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

from ...experiments.config import TaskConfig, check_fields, setting

__all__ = ["CHECKS", "CoinClaimsConfig"]


CHECKS = ("smoothing", "dropout", "propagation")


@dataclass
class CoinClaimsConfig(TaskConfig):
    """Configuration of ``pdenets run coin-claims``."""

    checks: List[str] = setting(list(CHECKS), "smoothing, dropout, propagation")
    sigmas: List[float] = setting([0.1, 0.25, 0.5, 0.75, 1.0, 1.5], "noise scales of the smoothing check")
    samples: int = setting(20000, "Monte Carlo samples per point")
    drop_rates: List[float] = setting([0.1, 0.25, 0.5], "dropout rates of the dropout check")

    def validate(self) -> None:
        super().validate()
        check_fields(
            self,
            non_empty=("checks", "sigmas", "drop_rates"),
            choices={"checks": CHECKS},
            counts=("samples",),
            positive=("sigmas",),
            probabilities=("drop_rates",),
        )
