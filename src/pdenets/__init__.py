"""pdenets: PDE-inspired deep learning in PyTorch.

Networks read as time discretizations of convection, diffusion and nonlocal
(integro-)differential equations, and tools that analyse trained networks as transports
of the data.
"""

__version__ = "0.1.0"

import warnings as _warnings

from ._checks import NonFiniteError
from ._registry import declare_home as _declare_home

# The engine keeps the registry of tasks (and of paper tables, which task modules register) one floor below
# the tasks themselves: the package names where its built-in tasks live (as pyproject.toml names entry
# points), so that the engine names none.
_declare_home("tasks", "pdenets.tasks")

# torch warns on every first use of CSR tensors and unchecked sparse constructors; our
# sparse operators are built from validated indices, so these say nothing to a user.
_warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
_warnings.filterwarnings("ignore", message="Sparse invariant checks are implicitly disabled")

__all__ = ["NonFiniteError", "__version__"]
