"""A registered task whose jobs take the run's context and return a record dataclass (the run protocol)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List

import torch

from pdenets.experiments import Report, RunContext, Task, TaskConfig, register_task


@dataclass
class WhereConfig(TaskConfig):
    count: int = 3


@dataclass(frozen=True, kw_only=True)
class WhereJob:
    index: int


@dataclass(frozen=True)
class WhereRecord:
    """What a job saw of its context, and a number computed on its device."""

    device: str
    data_dir: str
    seed: int
    threads: int
    square: float
    pid: int


@register_task
class WhereTask(Task[WhereConfig]):
    name = "where-it-runs"
    description = "engine test task: what a job receives of its context"
    config_class = WhereConfig
    record_type = WhereRecord

    def jobs(self) -> List[WhereJob]:
        return [WhereJob(index=index) for index in range(self.config.count)]

    @staticmethod
    def run_job(spec: WhereJob, context: RunContext) -> WhereRecord:
        value = context.to(torch.tensor(float(spec.index), dtype=torch.float64))
        return WhereRecord(
            device=str(value.device),
            data_dir=str(context.data_dir),
            seed=context.seed,
            threads=context.threads,
            square=float(value * value),
            pid=os.getpid(),
        )

    def summarize(self, records: List[Dict[str, Any]]) -> Dict[str, Any]:
        return {"squares": sorted(record["square"] for record in records)}

    def report(self, results, records, run_dir) -> None:
        report = Report("where")
        report.table(["index", "square"], [[r["index"], r["square"]] for r in records])
        report.write(run_dir)
