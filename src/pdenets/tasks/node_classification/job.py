"""One run of node classification: the job that identifies it (:class:`NodeJob`, what its store key
hashes) and the model it trains (:attr:`NodeJob.settings`, a :class:`~.model.NodeSettings`: the network,
its fit and its saved form are :mod:`.model`'s). The task plans and runs jobs (:mod:`.task`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Optional, Union

from ...models.node_training import DiffusionSettings, MessagePassingSettings
from .model import NodeSettings

__all__ = ["NodeJob"]


@dataclass(frozen=True, kw_only=True)
class NodeJob:
    """One (graph, model, depth, split, initialization) of the protocol or the depth study.

    Split ``split`` and its ``init``-th initialization come from prefixes of seeded streams, the same for any
    number of splits and initializations: a protocol grown from 10 × 2 to 100 × 20 keeps the runs already
    stored.
    """

    experiment: str
    graph: str
    dataset: str
    model: str
    depth: Optional[int]
    split: int
    init: int
    seed: int
    train_per_class: int
    val_per_class: int
    max_epochs: int
    patience: int
    hyperparameters: Union[DiffusionSettings, MessagePassingSettings]
    missing_features: str = "identity"
    #: under torchrun: how the graph is split over the processes. ``contiguous`` keeps the node numbering, so
    #: the dropout masks and the numbers are the single process's; another partition renumbers the nodes,
    #: which hands each node other mask entries (same distribution, other draws): it then enters the store key
    partition: str = field(default="contiguous", metadata={"key": "unless-default"})
    #: how the features entered the models (``feature_transform`` resolved on the graph): the citation
    #: graphs' bag-of-words keeps the store keys of the runs made before the setting existed
    feature_transform: str = field(default="bag-of-words", metadata={"key": "unless-default"})
    #: the user's split file (read where the job runs) and the digest of the split it holds (its key)
    split_file: Optional[str] = field(default=None, metadata={"key": False})
    split_digest: str = field(default="", metadata={"key": "unless-default"})
    #: the device left the spec for the run's context; the keys of the runs stored on the CPU stay
    stored_constants: ClassVar[Mapping[str, Any]] = {"device": "cpu"}

    @property
    def settings(self) -> NodeSettings:
        """The model this job trains and its settings."""
        return NodeSettings(
            self.model,
            self.hyperparameters,
            self.depth,
            self.max_epochs,
            self.patience,
            self.missing_features,
            self.feature_transform,
        )
