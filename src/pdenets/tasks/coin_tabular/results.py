"""The results of ``pdenets run coin-tabular``: accuracy per dataset, labels per class and model, and the
paired count of splits on which COIN beats the MLP alone (``results.json`` is
:meth:`CoinTabularResults.to_dict`).

Examples:
    >>> cell = AccuracyCell(Stats.of([0.9, 0.8], scale=100), splits=2)
    >>> results = CoinTabularResults(
    ...     table={"breast-cancer": {"5": {"coin": cell}}},
    ...     coin_vs_mlp={"breast-cancer/5": PairedComparison(pairs=2, wins=1, mean_gain=0.5)},
    ... )
    >>> plain = results.to_dict()
    >>> list(plain), list(plain["table"]["breast-cancer"]["5"]["coin"])  # doctest: +NORMALIZE_WHITESPACE
    (['table', 'coin_vs_mlp', 'calibration', 'figures'],
     ['mean', 'std', 'min', 'max', 'median', 'count', 'splits'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from ...analysis.calibration import CalibrationSummary
from ...experiments.results import FLATTEN, OMIT_NONE, TaskResults
from ...experiments.summary import Stats

__all__ = ["AccuracyCell", "PairedComparison", "CoinTabularResults", "NetworkRecord", "SpreadingRecord"]


#: a record field stored and read by no summary
_STORED = {"read": False}


@dataclass(frozen=True)
class _TabularRecord:
    """What one run returns and the store keeps: the ``accuracy`` on the scored rows (a fraction), the
    seconds, and how many rows were scored (``unlabelled``). The summary reads ``accuracy``."""

    accuracy: float = field(metadata={"kind": "fraction"})
    seconds: float = field(metadata={"read": False})
    unlabelled: int = field(metadata={"read": False})
    #: the calibration on the scored rows, each half measured with the temperature fitted on the other
    #: (:func:`~pdenets.analysis.calibration.cross_fitted_calibration`); absent from a record stored before it
    temperature: Optional[float] = field(default=None, kw_only=True, metadata={"read": False})
    ece: Optional[float] = field(default=None, kw_only=True, metadata={"read": False})
    calibrated_ece: Optional[float] = field(default=None, kw_only=True, metadata={"read": False})
    reliability: Optional[Dict[str, Any]] = field(default=None, kw_only=True, metadata={"read": False})
    calibrated_reliability: Optional[Dict[str, Any]] = field(
        default=None, kw_only=True, metadata={"read": False}
    )


@dataclass(frozen=True)
class NetworkRecord(_TabularRecord):
    """The record of a trained network (COIN, the MLP): the last epoch's training loss too."""

    final_loss: float = field(metadata={"read": False})


@dataclass(frozen=True)
class SpreadingRecord(_TabularRecord):
    """The record of label spreading: the mean of the rows' largest class probability too."""

    mean_confidence: float = field(metadata={"read": False})


@dataclass(frozen=True)
class AccuracyCell:
    """One model's accuracy at one dataset and number of labels per class, over the splits.

    Args:
        accuracy: the statistics of the accuracy on the held-out labelled rows (those of known label not
            trained on), in percent, over the splits (its keys ``mean``, ``std``, ``min``, ``max``,
            ``median``, ``count`` sit in the cell itself).
        splits: the runs of the cell (one per split).
        scored_rows: the held-out labelled rows each split scores (the smallest over the splits; ``None``
            where the records do not say).
    """

    accuracy: Stats = field(metadata=FLATTEN)
    splits: int
    scored_rows: Optional[int] = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class PairedComparison:
    """COIN against the MLP alone on the same splits of one dataset and number of labels per class.

    Args:
        pairs: the splits on which both models ran.
        wins: those on which COIN is more accurate than the MLP (ties are not wins).
        mean_gain: COIN's accuracy minus the MLP's, in percentage points, averaged over the pairs (NaN without
            a pair).
    """

    pairs: int
    wins: int
    mean_gain: float


@dataclass(frozen=True)
class CoinTabularResults(TaskResults):
    """The summary of a ``coin-tabular`` run.

    Args:
        table: dataset label → labels per class (as text, e.g. ``"5"``) → model → its :class:`AccuracyCell`;
            datasets, settings and models in the order of the runs.
        coin_vs_mlp: ``"dataset/labels per class"`` → the :class:`PairedComparison` of COIN and the MLP,
            where both ran.
        calibration: ``"dataset, k labels per class"`` → model → the calibration of its splits' scored rows.
    """

    table: Dict[str, Dict[str, Dict[str, AccuracyCell]]]
    coin_vs_mlp: Dict[str, PairedComparison]
    calibration: Dict[str, Dict[str, CalibrationSummary]] = field(default_factory=dict)
