"""Predictions on your own table: train, keep the model, and classify tomorrow's rows with it.

A table of machines (four sensor readings and a status) leaves the status of one row in five empty: those
rows are what we want answered. ``pdenets run coin-tabular`` measures its models on the
rows whose status is known (here COIN alone), writes ``predictions.csv`` with every row's predicted status by
its id (the empty ones included), and keeps the model in ``model-coin/`` (safetensors weights and a manifest).
The next day, ``pdenets predict RUN_DIR --dataset new.csv`` reloads the COIN model and classifies new rows
it never saw. The figure shows, for the rows without a status and for the new rows, how sure the model is
of its answer, split by whether the answer was right (the truth is known here because we made the data).
"""

import csv

import matplotlib.pyplot as plt
import numpy as np

from pdenets.cli import main

STATUSES = ["idle", "running", "failing"]
rng = np.random.default_rng(0)


def write_machines(path, rows, first, hide_every):
    """Machines whose sensors drift with their status; every ``hide_every``-th status left empty."""
    truth = {}
    with open(path, "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["id", "vibration", "temperature", "current", "noise", "status"])
        for row in range(rows):
            status = row % 3
            readings = rng.normal(size=4) + 2.0 * np.eye(3, 4)[status]
            machine = f"machine-{first + row:04d}"
            truth[machine] = STATUSES[status]
            shown = "" if hide_every and row % hide_every == 0 else STATUSES[status]
            writer.writerow([machine, *(f"{value:.3f}" for value in readings), shown])
    return truth


truth = write_machines("machines.csv", 240, first=0, hide_every=5)
# --workers 1: the runs in this process (worker processes would import this script again)
command = [
    "run",
    "coin-tabular",
    "--dataset",
    "machines.csv",
    "--labels",
    "5",
    "--splits",
    "3",
    "--workers",
    "1",
]
assert main(command + ["--models", "coin", "--epochs", "80", "--no-progress", "--out", "run"]) == 0


def confidences(path):
    with open(path, newline="") as stream:
        rows = list(csv.DictReader(stream))
    return [
        (
            max(float(value) for key, value in row.items() if key.startswith("p(")),
            row["predicted"] == truth[row["id"]],
        )
        for row in rows
        if not row.get("label")
    ]


unlabelled = confidences("run/predictions.csv")
print(f"{len(unlabelled)} machines without a status: {np.mean([right for _, right in unlabelled]):.1%} right")

truth.update(write_machines("new.csv", 60, first=1000, hide_every=1))  # tomorrow's rows, no status yet
assert (
    main(["predict", "run", "--dataset", "new.csv", "--model", "coin", "--out", "new_predictions.csv"]) == 0
)
new = confidences("new_predictions.csv")
print(f"{len(new)} new machines: {np.mean([right for _, right in new]):.1%} right")

fig, axes = plt.subplots(1, 2, figsize=(7, 2.8), layout="constrained", sharey=True)
for ax, answers, title in (
    (axes[0], unlabelled, "rows without a status"),
    (axes[1], new, "new rows (reloaded model)"),
):
    right = [p for p, ok in answers if ok]
    wrong = [p for p, ok in answers if not ok]
    ax.hist(
        [right, wrong],
        bins=np.linspace(1 / 3, 1, 9),
        stacked=True,
        label=["right", "wrong"],
        color=["tab:green", "tab:red"],
    )
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("probability of the predicted status")
axes[0].set_ylabel("machines")
axes[1].legend(fontsize=8)
fig.savefig("predictions_on_your_table.png", dpi=110)
