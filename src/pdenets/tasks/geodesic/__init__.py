"""Geodesic analysis of trained networks (LSS/LSR/OTS, robustness, unit ablation): the task and its report.

Modules: :mod:`.report`, :mod:`.results`, :mod:`.task`. Importing the package registers the task.
"""

from .task import GeodesicConfig, GeodesicTask

__all__ = ["GeodesicConfig", "GeodesicTask"]
