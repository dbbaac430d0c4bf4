"""Layers: each module is one time step of a PDE (convection, diffusion, Hamiltonian, nonlocal, ...)."""

from .convection import ConvectionBlock
from .diffusion import DiffusionLayer
from .hamiltonian import HamiltonianBlock
from .nonlocal_block import NonlocalBlock

__all__ = ["ConvectionBlock", "DiffusionLayer", "HamiltonianBlock", "NonlocalBlock"]
