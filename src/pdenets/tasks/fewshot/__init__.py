"""Few-shot classification on features files: the task, its protocol (features by dataset, episodes, scores),
results and report.

Modules: :mod:`.config`, :mod:`.protocol`, :mod:`.results`, :mod:`.report`, :mod:`.task`. Importing the
package registers the task.
"""

from .task import FewShotConfig, FewShotTask

__all__ = ["FewShotConfig", "FewShotTask"]
