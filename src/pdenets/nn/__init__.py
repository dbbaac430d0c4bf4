"""Layers: each module is one time step of a PDE (convection, diffusion, ...)."""

from .convection import ConvectionBlock
from .diffusion import DiffusionLayer

__all__ = ["ConvectionBlock", "DiffusionLayer"]
