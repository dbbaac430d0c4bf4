"""Hamiltonian CNNs with nonlocal PIDE blocks on images: the task and its report.

Modules: :mod:`.config`, :mod:`.results`, :mod:`.report`, :mod:`.task`. Importing the package registers
the task.
"""

from .task import ImageClassificationConfig, ImageClassificationTask

__all__ = ["ImageClassificationConfig", "ImageClassificationTask"]
