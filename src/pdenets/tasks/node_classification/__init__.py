"""Semi-supervised node classification (Diff-ResNet, PyG baselines): the task and its report.

Modules: :mod:`.report`, :mod:`.results`, :mod:`.task`. Importing the package registers the task.
"""

from .task import NodeClassificationConfig, NodeClassificationTask

__all__ = ["NodeClassificationConfig", "NodeClassificationTask"]
