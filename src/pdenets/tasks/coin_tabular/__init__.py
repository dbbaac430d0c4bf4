"""COIN for tabular classification with few labels: the task, its results and its report.

Modules: :mod:`.config`, :mod:`.report`, :mod:`.results`, :mod:`.task`. Importing the package registers the
task.
"""

from .task import CoinTabularConfig, CoinTabularTask

__all__ = ["CoinTabularConfig", "CoinTabularTask"]
