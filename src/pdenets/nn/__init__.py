"""Layers: each module is one time step of a PDE (convection, diffusion, Hamiltonian, nonlocal, ...)."""

from .convection import ConvectionBlock
from .diffusion import DiffusionLayer
from .dropout import FastDropout, fast_dropout
from .dropout_diffusion import (
    dropout_diffusion_coefficients,
    dropout_readout_variance,
    dropout_second_order_mean,
)
from .hamiltonian import HamiltonianBlock
from .nonlocal_block import NonlocalBlock
from .smoothing import RandomizedSmoothing, SmoothedEstimate, gaussian_smoothing, sine_heat_solution

__all__ = [
    "ConvectionBlock",
    "DiffusionLayer",
    "FastDropout",
    "fast_dropout",
    "HamiltonianBlock",
    "NonlocalBlock",
    "RandomizedSmoothing",
    "SmoothedEstimate",
    "gaussian_smoothing",
    "sine_heat_solution",
    "dropout_diffusion_coefficients",
    "dropout_readout_variance",
    "dropout_second_order_mean",
]
