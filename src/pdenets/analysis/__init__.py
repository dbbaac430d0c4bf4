"""Analysis of networks and data flows: distance–diameter ratio; tracks of any network and the transport
scores (LSR, LSS, OTS, W₂, track distance, Theorem 1 bound), robustness to noise and unit ablation of "A
Mathematical Principle of Deep Learning: Learn the Geodesic Curve in the Wasserstein Space"; the measured
receptive field of a CNN; the calibration of class probabilities (expected calibration error, temperature
scaling)."""

from .ablation import important_units, unit_ablation
from .calibration import expected_calibration_error, fit_temperature, reliability_bins, temperature_scaled
from .ratio import DistanceDiameter, distance_diameter
from .receptive_field import receptive_field, receptive_field_mask
from .robustness import ATTACKS, fgsm, gaussian_noise, robustness_curve, variation_rates
from .tracks import Stage, project_tracks, record_tracks, select_blocks
from .transport import (
    ASSIGNMENT_SOLVERS,
    line_shape_ratio,
    line_shape_score,
    optimal_assignment,
    optimal_transport_score,
    segment_lengths,
    segment_proportions,
    squared_distances,
    theorem1_lower_bound,
    track_distance,
    wasserstein2_squared,
)

__all__ = [
    "expected_calibration_error",
    "fit_temperature",
    "reliability_bins",
    "temperature_scaled",
    "important_units",
    "unit_ablation",
    "ATTACKS",
    "fgsm",
    "gaussian_noise",
    "robustness_curve",
    "variation_rates",
    "DistanceDiameter",
    "distance_diameter",
    "Stage",
    "project_tracks",
    "record_tracks",
    "select_blocks",
    "receptive_field",
    "receptive_field_mask",
    "ASSIGNMENT_SOLVERS",
    "line_shape_ratio",
    "line_shape_score",
    "optimal_assignment",
    "optimal_transport_score",
    "segment_lengths",
    "segment_proportions",
    "squared_distances",
    "theorem1_lower_bound",
    "track_distance",
    "wasserstein2_squared",
]
