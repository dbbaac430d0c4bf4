"""The Diff-ResNet synthetic suite (XOR diffusion, moon/circle/spiral): the task and its report.

Modules: :mod:`.report`, :mod:`.results`, :mod:`.task`. Importing the package registers the task.
"""

from .task import SyntheticConfig, SyntheticTask

__all__ = ["SyntheticConfig", "SyntheticTask"]
