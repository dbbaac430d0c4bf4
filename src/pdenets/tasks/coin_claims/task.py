"""The COIN framework's claims, measured: noise injection = the heat equation, dropout = a diffusion term,
GNN propagation = diffusion steps.

Three checks (each also a unit test; the derivations are in ``docs/coin.md``):

* **randomized smoothing** — ``E f(x + σε)`` by Monte Carlo for ``f(x) = sin(ωᵀx)`` against the heat
  semigroup ``e^{−‖ω‖²σ²/2} sin(ωᵀx)`` (``u_t = ½Δu`` at ``t = σ²``), for several ``σ``: the error and the
  Monte Carlo confidence half-width side by side, and the error against the wrong time ``t = σ``;
* **dropout** — the read-out variance ``p/(1−p) Σ_i W_ki² h_i²`` and the second-order (diffusion) mean of a
  quadratic against Monte Carlo over dropout masks;
* **propagation** — ``gcn_propagate`` / ``sgc_propagate`` / ``appnp_propagate`` (diffusion steps with the
  normalized Laplacian) against PyTorch Geometric's ``GCNConv``, ``SGConv``, ``APPNP`` on a random graph and
  on Cora when the data is there (largest absolute difference, float64).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

import numpy as np
import torch

from ...experiments.context import RunContext
from ...experiments.plots import plt
from ...experiments.records import RecordFields, fields_of_dataclass
from ...experiments.task import Task, register_task
from ...nn.dropout import fast_dropout
from ...nn.dropout_diffusion import dropout_readout_variance, dropout_second_order_mean
from ...nn.smoothing import gaussian_smoothing, sine_heat_solution
from ...operators.propagation import appnp_propagate, gcn_propagate, sgc_propagate
from .config import CoinClaimsConfig
from .results import CoinClaimsResults, DropoutCheck, PropagationCheck, SmoothingCheck

__all__ = ["CoinClaimsConfig", "CoinClaimsTask", "ClaimJob"]


@dataclass(frozen=True, kw_only=True)
class ClaimJob:
    """One of the three checks, with the settings it computes with (the others empty)."""

    check: str
    sigmas: tuple
    samples: int
    drop_rates: tuple
    seed: int


def _generator(spec: ClaimJob, device: torch.device) -> torch.Generator:
    """The check's random stream, on the device it computes on (the CPU's is the one the stored runs drew
    from)."""
    return torch.Generator(device=device).manual_seed(spec.seed)


def _smoothing(spec: ClaimJob, device: torch.device, data_dir: Optional[str]) -> Dict[str, Any]:
    generator = _generator(spec, device)
    omega = torch.tensor([0.6, -0.3, 0.8], dtype=torch.float64, device=device)
    points = torch.randn(8, 3, dtype=torch.float64, generator=generator, device=device)
    rows = []
    for sigma in spec.sigmas:
        estimate = gaussian_smoothing(
            lambda z: torch.sin(z @ omega).unsqueeze(-1),
            points,
            sigma=sigma,
            num_samples=spec.samples,
            confidence=0.99,
            generator=generator,
        )
        exact = sine_heat_solution(points, omega, sigma**2).unsqueeze(-1)
        wrong = sine_heat_solution(points, omega, sigma).unsqueeze(-1)
        error = (estimate.mean - exact).abs()
        rows.append(
            {
                "sigma": sigma,
                "max_error": float(error.max()),
                "max_half_width": float(estimate.half_width.max()),
                "inside": int((error <= estimate.half_width).sum()),
                "points": int(error.numel()),
                "max_error_wrong_time": float((estimate.mean - wrong).abs().max()),
                "estimates": estimate.mean[:, 0].tolist(),
                "exact": exact[:, 0].tolist(),
                "half_widths": estimate.half_width[:, 0].tolist(),
            }
        )
    return {"rows": rows, "norm_omega_sq": float(omega.square().sum())}


def _dropout(spec: ClaimJob, device: torch.device, data_dir: Optional[str]) -> Dict[str, Any]:
    generator = _generator(spec, device)
    hidden = torch.randn(32, dtype=torch.float64, generator=generator, device=device)
    weight = torch.randn(4, 32, dtype=torch.float64, generator=generator, device=device)
    matrix = torch.randn(32, 32, dtype=torch.float64, generator=generator, device=device) / 32
    rows = []
    for p in spec.drop_rates:
        torch.manual_seed(spec.seed)
        masked = fast_dropout(hidden.expand(spec.samples * 10, -1).contiguous(), p)
        outputs = masked @ weight.T
        quadratic = torch.einsum("bi,ij,bj->b", masked, matrix, masked)
        predicted = dropout_readout_variance(hidden, weight, p)
        mean = dropout_second_order_mean(lambda v: v @ matrix @ v, hidden, p)
        rows.append(
            {
                "p": p,
                "variance_predicted": predicted.tolist(),
                "variance_monte_carlo": outputs.var(0).tolist(),
                "max_relative_error": float(((outputs.var(0) - predicted) / predicted).abs().max()),
                "quadratic_mean_predicted": float(mean.detach()),
                "quadratic_mean_monte_carlo": float(quadratic.mean()),
                "quadratic_standard_error": float(quadratic.std() / math.sqrt(quadratic.numel())),
                "quadratic_without_diffusion": float(hidden @ matrix @ hidden),
            }
        )
    return {"rows": rows, "masks": spec.samples * 10}


def _propagation(spec: ClaimJob, device: torch.device, data_dir: Optional[str]) -> Dict[str, Any]:
    from torch_geometric.nn import APPNP, GCNConv, SGConv

    graphs = {}
    generator = torch.Generator().manual_seed(spec.seed)
    dense = (torch.rand(200, 200, generator=generator) < 0.03).double()
    dense = torch.triu(dense, 1)
    dense = dense + dense.T
    graphs["random (200 nodes)"] = (dense.nonzero().T, None, 200)
    try:
        from torch_geometric.utils import to_undirected

        from ...data.graphs import load_graph

        cora = load_graph("cora", data_dir)
        graphs["cora (undirected)"] = (to_undirected(cora.edge_index), None, int(cora.num_nodes))
        graphs["cora (directed, as stored)"] = (cora.edge_index, None, int(cora.num_nodes))
    except (OSError, ValueError):  # no Cora in the data directory: the random graph still checks the identity
        pass
    rows = []
    for name, (edge_index, edge_weight, nodes) in graphs.items():
        x = torch.randn(nodes, 16, dtype=torch.float64, generator=generator).to(device)
        edge_index = edge_index.to(device)
        # W[i, j] = weight of edge (i, j) and row i diffuses from its columns; PyG's layers send messages from
        # source to target, so a directed edge list is the same graph with its edges reversed
        ours = edge_index.flip(0) if "directed, as stored" in name else edge_index
        graph = (
            ours,
            torch.ones(edge_index.shape[1], dtype=torch.float64, device=device)
            if edge_weight is None
            else edge_weight,
        )
        conv = GCNConv(16, 16, bias=False).double().to(device)
        sgc = SGConv(16, 16, K=2, bias=False).double().to(device)
        with torch.no_grad():
            conv.lin.weight.copy_(torch.eye(16, dtype=torch.float64, device=device))
            sgc.lin.weight.copy_(torch.eye(16, dtype=torch.float64, device=device))
        with torch.no_grad():  # the layers' weights need no gradient here
            differences = {
                "GCN = 1 step, γ = 1": (gcn_propagate(x, graph, nodes), conv(x, edge_index)),
                "SGC (K = 2) = 2 steps": (sgc_propagate(x, graph, 2, nodes), sgc(x, edge_index)),
                "APPNP (K = 10, α = 0.1)": (
                    appnp_propagate(x, graph, 10, 0.1, nodes),
                    APPNP(10, 0.1)(x, edge_index),
                ),
            }
        for label, (ours, theirs) in differences.items():
            rows.append(
                {
                    "graph": name,
                    "propagation": label,
                    "max_abs_difference": float((ours - theirs).abs().max()),
                    "scale": float(theirs.abs().max()),
                }
            )
    return {"rows": rows}


def run_claim(spec: ClaimJob, context: RunContext = RunContext()) -> Dict[str, Any]:
    """Run one check in ``context`` (its device; the data folder, where the propagation check finds Cora)."""
    start = time.perf_counter()
    check = {"smoothing": _smoothing, "dropout": _dropout, "propagation": _propagation}[spec.check]
    out = check(spec, context.device, context.data_dir)
    out["seconds"] = time.perf_counter() - start
    return out


@register_task
class CoinClaimsTask(Task[CoinClaimsConfig]):
    name = "coin-claims"
    description = (
        "COIN's unifying claims measured: noise injection = heat equation, dropout = diffusion, "
        "GNN = diffusion"
    )
    config_class = CoinClaimsConfig
    shortcuts = {"check": "checks"}
    columns = {"check": "TEXT"}

    def record_fields(self, spec: ClaimJob, record: Mapping[str, Any]) -> RecordFields:
        """The fields of the check's typed result (its rows with every column), which is built from the
        record."""
        checks = {"smoothing": SmoothingCheck, "dropout": DropoutCheck, "propagation": PropagationCheck}
        return fields_of_dataclass(checks[spec.check], leave_out=("key", "status"))

    @classmethod
    def quick_config(cls) -> CoinClaimsConfig:
        return CoinClaimsConfig(samples=4000, sigmas=[0.25, 1.0])

    def jobs(self) -> List[ClaimJob]:
        config = self.config
        # a job holds the settings its check computes with (the others empty), so that changing the dropout
        # rates leaves the stored smoothing run valid
        uses = {"smoothing": ("sigmas", "samples"), "dropout": ("drop_rates", "samples"), "propagation": ()}
        return [
            ClaimJob(
                check=check,
                sigmas=tuple(config.sigmas) if "sigmas" in uses[check] else (),
                samples=config.samples if "samples" in uses[check] else 0,
                drop_rates=tuple(config.drop_rates) if "drop_rates" in uses[check] else (),
                seed=config.seed,
            )
            for check in config.checks
        ]

    @staticmethod
    def run_job(spec: ClaimJob, context: RunContext) -> Dict[str, Any]:
        return run_claim(spec, context)

    def summarize(self, records: List[Dict[str, Any]]) -> CoinClaimsResults:
        by_check = {record["check"]: record for record in records}
        return CoinClaimsResults(
            smoothing=SmoothingCheck.of(by_check["smoothing"]) if "smoothing" in by_check else None,
            dropout=DropoutCheck.of(by_check["dropout"]) if "dropout" in by_check else None,
            propagation=PropagationCheck.of(by_check["propagation"]) if "propagation" in by_check else None,
        )

    def report(self, results: CoinClaimsResults, records: List[Dict[str, Any]], run_dir) -> None:
        report = self.new_report(results, "pdenets — COIN's claims, measured")
        report.paragraph(
            "Each claim is a unit test too (tests/nn/test_smoothing.py, tests/nn/test_dropout_diffusion.py, "
            "tests/operators/test_propagation.py); the derivations are in docs/coin.md."
        )
        figures = results.figures
        smoothing = results.smoothing
        if smoothing is not None:
            report.heading("Randomized smoothing is the heat equation u_t = ½Δu at t = σ²")
            report.paragraph(
                f"f(x) = sin(ωᵀx), ‖ω‖² = {smoothing.norm_omega_sq:g}, 8 points, "
                f"{self.config.samples:,} Monte Carlo samples each, 99 % normal-approximation intervals."
            )
            rows = [
                [
                    f"{r.sigma:g}",
                    f"{r.max_error:.2e}",
                    f"{r.max_half_width:.2e}",
                    f"{r.inside}/{r.points}",
                    f"{r.max_error_wrong_time:.2e}",
                ]
                for r in smoothing.rows
            ]
            report.table(
                [
                    "σ",
                    "largest error against e^{−‖ω‖²σ²/2} sin(ωᵀx)",
                    "largest half-width",
                    "inside the interval",
                    "largest error against t = σ (wrong time)",
                ],
                rows,
            )
            figures["smoothing"] = _smoothing_figure(smoothing, run_dir)
            report.figure(
                figures["smoothing"],
                "Monte Carlo estimates (points with 99 % intervals) against the heat "
                "semigroup at t = σ² (line), one panel per σ.",
            )
        dropout = results.dropout
        if dropout is not None:
            report.heading("Dropout is a diffusion term with coefficient p/(1−p)·h²")
            rows = [
                [
                    f"{r.p:g}",
                    f"{r.max_relative_error:.2%}",
                    f"{r.quadratic_mean_predicted:.4f}",
                    f"{r.quadratic_mean_monte_carlo:.4f} ± {r.quadratic_standard_error:.4f}",
                    f"{r.quadratic_without_diffusion:.4f}",
                ]
                for r in dropout.rows
            ]
            report.table(
                [
                    "p",
                    "read-out variance: largest relative error vs Monte Carlo",
                    "E hᵀAh predicted (diffusion)",
                    "Monte Carlo (± s.e.)",
                    "without the diffusion term",
                ],
                rows,
                caption=f"{dropout.masks:,} dropout masks per rate.",
            )
        if results.propagation is not None:
            report.heading("GNN propagation is diffusion (normalized Laplacian of the self-looped graph)")
            rows = [
                [r.graph, r.propagation, f"{r.max_abs_difference:.1e}", f"{r.scale:.2f}"]
                for r in results.propagation.rows
            ]
            report.table(
                ["graph", "identity", "largest difference pdenets − PyG (float64)", "largest output"],
                rows,
                caption="Directed edge lists: PyG's layers send messages from source to target, pdenets' "
                "W[i, j] lets row i diffuse from column j, so the stored Cora edges enter reversed.",
            )
        self.write_report(report, run_dir)


def _smoothing_figure(smoothing: SmoothingCheck, run_dir) -> str:
    rows = smoothing.rows
    fig, axes = plt.subplots(
        1, len(rows), figsize=(2.6 * len(rows), 2.8), layout="constrained", squeeze=False
    )
    for ax, row in zip(axes[0], rows):
        order = np.argsort(row.exact)
        exact = np.asarray(row.exact)[order]
        ax.plot(exact, exact, "k-", linewidth=0.8)
        ax.errorbar(
            exact,
            np.asarray(row.estimates)[order],
            yerr=np.asarray(row.half_widths)[order],
            fmt="o",
            markersize=3,
            capsize=2,
        )
        ax.set_title(f"σ = {row.sigma:g}", fontsize=9)
        ax.set_xlabel("closed form")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("Monte Carlo estimate")
    return run_dir.save_figure(fig, "smoothing.png")
