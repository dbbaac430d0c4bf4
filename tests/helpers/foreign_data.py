"""Data of a user's own, in the accepted file forms and in the user's words: none of it is a paper's dataset.

Each writer puts a small, learnable dataset under ``folder`` and returns the path to give ``--dataset``:
a graph of named users in three teams (a text edge list with labels and features beside it), few-shot
features of named intents (the ``.npz`` features format), a tabular CSV whose label column holds words, and
a traffic folder: named speed sensors read every 5 minutes. The reports of runs on them must speak of
these, never of the papers' datasets."""

from pathlib import Path

import numpy as np

#: what a report on a user's data must never print: the papers' datasets and their words
PAPER_WORDS = (
    "cora",
    "citeseer",
    "pubmed",
    "omniglot",
    "clinc",
    "miniimagenet",
    "mnist",
    "cifar",
    "chickenpox",
    "england",
    "covid",
    "epidemic",
    "county",
    "counties",
    "region",
    "breast",
    "cancer",
    "tumour",
    "lake et al",
    "alphabet",
    "citation",
)


def graph_edge_list(
    folder: Path,
    nodes_per_team: int = 80,
    seed: int = 0,
    *,
    stem: str = "friends",
    labels: tuple = ("team-north", "team-south", "team-west"),
) -> Path:
    """Users in three teams, befriending their team 10x as often; 8 features, noisy team means (the file's
    ``stem`` and the teams' ``labels`` may be any names without white space)."""
    rng = np.random.default_rng(seed)
    teams = np.repeat(np.arange(3), nodes_per_team)
    n = len(teams)
    same = teams[:, None] == teams[None, :]
    friends = np.triu(rng.random((n, n)) < np.where(same, 0.08, 0.008), 1)
    names = [f"user_{i:03d}" for i in range(n)]
    path = folder / f"{stem}.txt"
    path.write_text("".join(f"{names[i]} {names[j]}\n" for i, j in zip(*np.nonzero(friends))))
    (folder / f"{stem}-labels.txt").write_text(
        "".join(f"{names[i]} {labels[t]}\n" for i, t in enumerate(teams))
    )
    features = rng.normal(size=(n, 8)) + 1.5 * np.eye(8)[teams]
    (folder / f"{stem}-features.txt").write_text(
        "".join(f"{names[i]} " + " ".join(f"{v:.4f}" for v in row) + "\n" for i, row in enumerate(features))
    )
    return path


def fewshot_features(
    folder: Path,
    classes: int = 24,
    per_class: int = 30,
    dim: int = 24,
    seed: int = 0,
    *,
    stem: str = "support_intents",
    names: tuple = (),
) -> Path:
    """Embeddings of ``classes`` named intents: Gaussian clusters around random centres (the classes' names
    start with ``names`` where given)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(classes, dim)) * 0.45
    labels = np.repeat(np.arange(classes), per_class)
    features = (centres[labels] + rng.normal(size=(len(labels), dim))).astype(np.float32)
    named = list(names) + [f"intent_{k:02d}" for k in range(len(names), classes)]
    path = folder / f"{stem}.npz"
    np.savez(path, features=features, labels=labels, class_names=np.array(named))
    return path


def tabular_csv(
    folder: Path,
    rows: int = 240,
    seed: int = 0,
    *,
    stem: str = "machines",
    columns: tuple = ("vibration", "temperature", "pressure", "humidity", "current"),
    classes: tuple = ("failed", "running"),
) -> Path:
    """Machines and whether they failed: 5 sensor readings (``columns``), the label a word in the last column
    (``classes``: failed, running)."""
    rng = np.random.default_rng(seed)
    failed = rng.random(rows) < 0.4
    readings = rng.normal(size=(rows, 5)) + 1.2 * failed[:, None] * np.array([1.0, -1.0, 0.5, 0.0, 0.8])
    path = folder / f"{stem}.csv"
    header = ",".join(columns) + ",status\n"
    path.write_text(
        header
        + "".join(
            ",".join(f"{v:.4f}" for v in row) + ("," + (classes[0] if bad else classes[1])) + "\n"
            for row, bad in zip(readings, failed)
        )
    )
    return path


def traffic_folder(
    folder: Path,
    sensors: int = 12,
    steps: int = 288,
    seed: int = 0,
    *,
    stem: str = "ring_road",
    names: tuple = (),
) -> Path:
    """Speed sensors on a ring road read every 5 minutes: a daily wave, neighbours alike, noise (the sensors'
    names start with ``names`` where given)."""
    rng = np.random.default_rng(seed)
    root = folder / stem
    root.mkdir()
    names = list(names) + [f"detector_{700 + k}" for k in range(len(names), sensors)]
    time = np.arange(steps)
    wave = 60 - 15 * np.exp(-(((time % 288) - 100) ** 2) / 400.0)
    speeds = wave[:, None] + rng.normal(scale=2.0, size=(steps, sensors)).cumsum(0) * 0.2
    speeds += rng.normal(scale=1.5, size=(steps, sensors))
    stamps = np.datetime64("2026-03-02T00:00") + np.arange(steps) * np.timedelta64(5, "m")
    rows = [
        f"{str(stamp).replace('T', ' ')}," + ",".join(f"{v:.2f}" for v in row)
        for stamp, row in zip(stamps, speeds)
    ]
    (root / "series.csv").write_text("time," + ",".join(names) + "\n" + "\n".join(rows) + "\n")
    ring = [(names[k], names[(k + 1) % sensors]) for k in range(sensors)]
    (root / "edges.csv").write_text("source,target\n" + "".join(f"{a},{b}\n{b},{a}\n" for a, b in ring))
    return root
