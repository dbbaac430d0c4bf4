"""COIN for epidemic forecasting: the task, its protocol (series, windows, scales, baselines) and report.

Modules: :mod:`.figures`, :mod:`.protocol`, :mod:`.report`, :mod:`.task`. Importing the package registers the
    task.
"""

from .task import CoinForecastConfig, CoinForecastTask

__all__ = ["CoinForecastConfig", "CoinForecastTask"]
