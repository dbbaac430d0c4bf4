"""Analysis of networks and data flows: distance–diameter ratio, ..."""

from .ratio import DistanceDiameter, distance_diameter

__all__ = ["DistanceDiameter", "distance_diameter"]
