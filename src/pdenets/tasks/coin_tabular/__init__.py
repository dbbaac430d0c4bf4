"""COIN for tabular classification with few labels: the task and its report.

Modules: :mod:`.report`, :mod:`.task`. Importing the package registers the task.
"""

from .task import CoinTabularConfig, CoinTabularTask

__all__ = ["CoinTabularConfig", "CoinTabularTask"]
