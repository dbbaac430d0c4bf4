"""node-classification on a user's edge list whose labels leave nodes out: every node of the graph is
predicted once, by its name, the unlabelled ones mostly right; the test accuracy recomputed from the file is
the stored run's; a second report writes the same file."""

import json
import random

from usergraphs import write_graph_with_features as _with_features

from pdenets.cli import main
from pdenets.data.transforms import is_user_graph
from pdenets.experiments.predictions import prediction_accuracy, read_predictions

#: names an edge list allows (no spaces or commas; at most 200 characters)
HOSTILE = ["<script>alert(1)</script>", "[a](javascript:x)", 'quote"q"', "=SUM(A1)", "x" * 200]


def _communities(folder, nodes=150, seed=0):
    """Three communities, named nodes (some hostile), 30 % of the labels left out; the truth of all."""
    rng = random.Random(seed)
    names = [HOSTILE[i // 31] if i % 31 == 0 and i // 31 < len(HOSTILE) else f"n{i}" for i in range(nodes)]
    classes = ["red", "green", "blue"]
    community = [i * 3 // nodes for i in range(nodes)]
    edges = set()
    for i in range(nodes):
        for _ in range(4):
            same = [j for j in range(nodes) if community[j] == community[i]]
            j = rng.choice(same) if rng.random() < 0.9 else rng.randrange(nodes)
            if i != j:
                edges.add((min(i, j), max(i, j)))
    graph = folder / "my graph.txt"
    lines = [f"{names[i]} {names[j]}" for i, j in sorted(edges)]
    graph.write_text("\n".join(lines + ["island1 island2"]) + "\n")
    labelled = [i for i in range(nodes) if rng.random() >= 0.3]
    graph.with_name("my graph-labels.txt").write_text(
        "".join(f"{names[i]} {classes[community[i]]}\n" for i in labelled)
    )
    return graph, {names[i]: classes[community[i]] for i in range(nodes)}, set(labelled)


def test_every_node_is_predicted_by_its_name_and_the_file_gives_the_reported_accuracy(tmp_path):
    graph, truth, labelled = _communities(tmp_path)
    out = tmp_path / "run"
    argv = ["run", "node-classification", "--dataset", str(graph), "--quick", "--models", "diff-resnet"]
    argv += ["--set", "train_per_class=5", "--set", "val_per_class=5", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    rows = read_predictions(out / "predictions.csv")
    assert sorted(row["id"] for row in rows) == sorted(truth)  # each node once, by its name as written
    unlabelled = [row for row in rows if row["split"] == "unlabelled"]
    assert len(unlabelled) == len(truth) - len(labelled) and all(row["label"] == "" for row in unlabelled)
    right = sum(row["predicted"] == truth[row["id"]] for row in unlabelled) / len(unlabelled)
    assert right >= 0.85, right
    assert {row["split"] for row in rows} == {"train", "val", "test", "unlabelled"}
    assert sum(row["split"] == "train" for row in rows) == 15
    # the file's test accuracy is the stored first run's, and the report prints it
    results = json.loads((out / "results.json").read_text())
    from_file = prediction_accuracy(rows, "test")
    report = (out / "report.md").read_text()
    assert f"| {100 * from_file:.2f} | {100 * from_file:.2f} |" in report
    # the accuracy to expect on the unlabelled nodes: their mean confidence in the file
    classes = [name for name in rows[0] if name.startswith("p(")]
    expected = sum(max(float(row[name]) for name in classes) for row in unlabelled) / len(unlabelled)
    assert f"| {len(unlabelled)} | {100 * expected:.1f} [" in report
    assert "## Calibration" in report and (out / "calibration.png").is_file()
    test_nodes = sum(row["split"] == "test" for row in rows)
    assert f"*Test nodes per run: my graph {test_nodes:,}." in report
    assert "2 node(s) outside the largest component" in report and "island1" in report
    assert "<script" not in report and "](javascript:" not in report and "predictions.csv" in report
    assert results["table"]["my graph"]["diff-resnet"]["runs"] == 2
    # a second report trains the first run again: the same predictions, bit for bit
    first = (out / "predictions.csv").read_bytes()
    assert main(argv + ["--report-only"]) == 0
    assert (out / "predictions.csv").read_bytes() == first


def test_predictions_follow_the_setting_and_name_each_graph_and_model(tmp_path):
    graph, _, _ = _communities(tmp_path, nodes=60)
    base = ["run", "node-classification", "--dataset", str(graph), "--max-epochs", "5", "--splits", "1"]
    base += ["--inits", "1", "--set", "train_per_class=3", "--set", "val_per_class=3", "--no-progress"]
    assert main(base + ["--models", "gcn", "--set", "predictions=never", "--out", str(tmp_path / "a")]) == 0
    assert not list((tmp_path / "a").glob("predictions*"))
    assert main(base + ["--models", "gcn,diff-resnet", "--out", str(tmp_path / "b")]) == 0
    assert sorted(p.name for p in (tmp_path / "b").glob("predictions*")) == [
        "predictions-diff-resnet.csv",
        "predictions-gcn.csv",
    ]
    assert not is_user_graph("cora") and is_user_graph(str(graph))


def test_the_users_split_file_is_used_exactly_and_keys_its_runs(tmp_path):
    from pdenets.experiments import job_key
    from pdenets.tasks.node_classification.task import NodeClassificationConfig, NodeClassificationTask

    graph, truth, labelled = _communities(tmp_path, nodes=90)
    names = sorted(truth)
    chosen = [name for name in names if name in {list(truth)[i] for i in labelled}]
    sets = {name: ("train", "val", "test")[index % 3] for index, name in enumerate(chosen)}
    split = tmp_path / "split.csv"
    split.write_text("node,split\n" + "".join(f"{name},{which}\n" for name, which in sets.items()))
    out = tmp_path / "run"
    argv = ["run", "node-classification", "--dataset", str(graph), "--models", "gcn", "--max-epochs", "5"]
    assert main(argv + ["--set", f"split_file={split}", "--no-progress", "--out", str(out)]) == 0
    rows = read_predictions(out / "predictions.csv")
    given = {row["id"]: row["split"] for row in rows if row["split"] in ("train", "val", "test")}
    assert given == sets  # exactly the file's sets, every other node in none
    assert "your split `split.csv`" in (out / "report.md").read_text()

    def keys(path):
        config = NodeClassificationConfig(
            datasets=[str(graph)], models=["gcn"], split_file=path, num_splits=5, num_inits=2
        )
        task = NodeClassificationTask(config)
        task.prepare()
        return {job_key("node-classification", job) for job in task.jobs()}

    first = keys(str(split))
    assert len(first) == 2  # the file's one split (num_splits does not apply) x 2 initializations
    edited = tmp_path / "edited.csv"
    edited.write_text(split.read_text().replace(",test\n", ",val\n", 1))
    assert keys(str(edited)).isdisjoint(first)
    random = NodeClassificationTask(  # 19 labelled nodes a class: random splits of 5 + 5
        NodeClassificationConfig(
            datasets=[str(graph)],
            models=["gcn"],
            num_splits=1,
            num_inits=2,
            train_per_class=5,
            val_per_class=5,
        )
    )
    random.prepare()
    assert {job_key("node-classification", job) for job in random.jobs()}.isdisjoint(first)


def test_the_saved_model_classifies_the_same_graph_alike_and_a_grown_one(tmp_path, capsys):
    small = tmp_path / "small"
    small.mkdir()
    graph = _with_features(small, 90, seed=0)
    out = tmp_path / "run"
    argv = ["run", "node-classification", "--dataset", str(graph), "--models", "diff-resnet", "--splits", "1"]
    argv += ["--inits", "1", "--max-epochs", "40", "--set", "train_per_class=5", "--set", "val_per_class=5"]
    assert main(argv + ["--no-progress", "--out", str(out)]) == 0
    same = tmp_path / "same.csv"
    assert main(["predict", str(out), "--dataset", str(graph), "--out", str(same)]) == 0
    written = {row["id"]: row for row in read_predictions(out / "predictions.csv")}
    for row in read_predictions(same):  # reloaded: the run's predictions, digit for digit
        assert [row[key] for key in row if key.startswith("p(")] == [
            written[row["id"]][key] for key in row if key.startswith("p(")
        ]
    grown_folder = tmp_path / "grown"
    grown_folder.mkdir()
    grown = _with_features(grown_folder, 150, seed=1)
    answer = tmp_path / "grown.csv"
    assert main(["predict", str(out), "--dataset", str(grown), "--out", str(answer)]) == 0
    assert "150 nodes of" in capsys.readouterr().out
    rows = read_predictions(answer)
    assert len(rows) == 150 and prediction_accuracy(rows) >= 0.85
    # a graph whose nodes have another number of features is refused in one line
    (grown_folder / "g-features.txt").write_text("".join(f"v{i} 1 2 3\n" for i in range(150)))
    from pdenets.data.transforms import prepared_graph

    prepared_graph.cache_clear()  # this process read the file before it was rewritten
    assert main(["predict", str(out), "--dataset", str(grown), "--out", str(tmp_path / "x.csv")]) == 2
    assert "features as the run read them, the model 4" in capsys.readouterr().err


def test_a_split_file_beside_the_graph_is_used_and_named_and_split_overrides_it(tmp_path, capsys):
    folder = tmp_path / "g"
    folder.mkdir()
    graph = _with_features(folder, 60, seed=2)
    sets = {f"v{i}": ("train" if i % 10 < 2 else "val" if i % 10 < 4 else "test") for i in range(60)}
    (folder / "g-split.csv").write_text("node,split\n" + "".join(f"{n},{s}\n" for n, s in sets.items()))
    argv = ["run", "node-classification", "--dataset", str(graph), "--models", "diff-resnet", "--inits", "1"]
    argv += ["--max-epochs", "20", "--set", "predictions=always", "--no-progress"]
    assert main(argv + ["--out", str(tmp_path / "beside")]) == 0
    rows = read_predictions(tmp_path / "beside" / "predictions.csv")
    assert {row["id"]: row["split"] for row in rows} == sets
    assert "your split `g-split.csv`" in (tmp_path / "beside" / "report.md").read_text()
    other = tmp_path / "mine.csv"
    other.write_text("".join(f"v{i},{'train' if i < 30 else 'val'}\n" for i in range(60)))
    assert main(argv + ["--split", str(other), "--out", str(tmp_path / "given")]) == 2  # no test node
    assert "no item is in test" in capsys.readouterr().err
    other.write_text(
        "".join(f"v{i},{'train' if i < 30 else 'val' if i < 40 else 'test'}\n" for i in range(60))
    )
    assert main(argv + ["--split", str(other), "--out", str(tmp_path / "given")]) == 0
    rows = read_predictions(tmp_path / "given" / "predictions.csv")
    assert sum(row["split"] == "train" for row in rows) == 30
    assert "your split `mine.csv`" in (tmp_path / "given" / "report.md").read_text()
