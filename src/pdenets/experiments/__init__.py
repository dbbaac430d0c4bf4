"""Experiment infrastructure: run directories, configs, reports and plots."""

from .config import apply_overrides, config_to_dict, load_config
from .report import Report
from .rundir import RunDirectory

__all__ = ["Report", "RunDirectory", "apply_overrides", "config_to_dict", "load_config"]
