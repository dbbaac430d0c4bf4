"""COIN for epidemic forecasting: the task, its protocol (series, windows, scales, baselines), results and
report.

Modules: :mod:`.config`, :mod:`.figures`, :mod:`.protocol`, :mod:`.report`, :mod:`.results`, :mod:`.task`.
Importing the package registers the task.
"""

from .task import CoinForecastConfig, CoinForecastTask

__all__ = ["CoinForecastConfig", "CoinForecastTask"]
