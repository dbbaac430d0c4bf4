"""COIN's unifying claims measured: noise injection = heat equation, dropout = diffusion, GNN = diffusion.

Modules: :mod:`.results`, :mod:`.task`. Importing the package registers the task.
"""

from .task import CoinClaimsConfig, CoinClaimsTask

__all__ = ["CoinClaimsConfig", "CoinClaimsTask"]
