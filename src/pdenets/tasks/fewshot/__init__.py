"""Few-shot classification on features files: the task, its protocol (features by dataset, episodes, scores)
and report.

Modules: :mod:`.protocol`, :mod:`.report`, :mod:`.task`. Importing the package registers the task.
"""

from .task import FewShotConfig, FewShotTask

__all__ = ["FewShotConfig", "FewShotTask"]
