"""A user's labelled texts to predictions in their own ids: ``pdenets features embed-text FILE``, then
``pdenets predict few-shot``; ``pdenets run few-shot`` takes the same file with ``laplacianshot``."""

import csv
import json

import numpy as np
import pytest
import torch

from pdenets.cli import main
from pdenets.data.fewshot import FeatureSet, load_features
from pdenets.experiments.predictions import prediction_accuracy, read_predictions
from pdenets.tasks.fewshot.predict import classify_queries

TOPICS = {
    "travel": "flight hotel trip airport booking passport luggage gate".split(),
    "banking": "balance account transfer deposit savings statement bank fee".split(),
    "cooking": "recipe oven bake boil pasta sauce kitchen spice".split(),
    "weather": "rain forecast sunny cloudy storm temperature wind snow".split(),
    "music": "song playlist album artist concert guitar track volume".split(),
}
FILLER = "please can you help me with my the a to for about what is how do i want need today".split()


def _user_texts(tmp_path, per_class=30, seed=0):
    """A CSV of intents, every fifth label left empty (the hidden truth returned), hostile ids among them."""
    rng = np.random.default_rng(seed)
    rows = [
        (name, " ".join(list(rng.choice(words, 2, replace=False)) + list(rng.choice(FILLER, 5))))
        for name, words in TOPICS.items()
        for _ in range(per_class)
    ]
    order = rng.permutation(len(rows))
    path, truth = tmp_path / "my texts.csv", {}
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["id", "utterance", "intent"])
        for position, index in enumerate(order):
            name, text = rows[index]
            row_id = f'<b>{position}</b>, "q"' if position % 7 == 0 else f"r{position}"
            hidden = position % 5 == 0
            writer.writerow([row_id, text, "" if hidden else name])
            if hidden:
                truth[row_id] = name
    return path, truth


def test_unlabelled_texts_are_predicted_once_each_by_their_ids(tmp_path, capsys):
    texts, truth = _user_texts(tmp_path)
    features = tmp_path / "texts.npz"
    assert main(["features", "embed-text", str(texts), "--encoder", "tfidf", "--out", str(features)]) == 0
    assert "120 text embeddings of 5 classes and 30 unlabelled to classify" in capsys.readouterr().out
    for method, floor in (("laplacianshot", 0.8), ("prototype", 0.8)):
        out = tmp_path / f"predictions-{method}.csv"
        assert (
            main(["predict", "few-shot", "--support", str(features), "--method", method, "--out", str(out)])
            == 0
        )
        assert (
            f"30 queries of {features} classified into 5 classes from 120 labelled rows"
            in capsys.readouterr().out
        )
        rows = read_predictions(out)
        assert sorted(row["id"] for row in rows) == sorted(truth)  # every unlabelled text once, by its id
        right = sum(row["predicted"] == truth[row["id"]] for row in rows) / len(rows)
        assert right >= floor, (method, right)
        probabilities = np.array([[float(row[f"p({name})"]) for name in sorted(TOPICS)] for row in rows])
        assert np.allclose(probabilities.sum(1), 1, atol=1e-4)
    default = tmp_path / "default.csv"
    assert main(["predict", "few-shot", "--support", str(features), "--out", str(default)]) == 0
    assert "with adaptive" in capsys.readouterr().out and len(read_predictions(default)) == 30


def test_labelled_queries_print_the_accuracy_the_file_gives(tmp_path, capsys):
    texts, _ = _user_texts(tmp_path)
    features = tmp_path / "texts.npz"
    main(["features", "embed-text", str(texts), "--encoder", "tfidf", "--out", str(features)])
    loaded = load_features(features)
    half = FeatureSet(loaded.features[::2], loaded.labels[::2], loaded.class_names, ids=loaded.ids[::2])
    rest = FeatureSet(loaded.features[1::2], loaded.labels[1::2], loaded.class_names, ids=loaded.ids[1::2])
    from pdenets.data.fewshot import save_features

    save_features(half, tmp_path / "support.npz")
    save_features(rest, tmp_path / "queries.npz")
    out = tmp_path / "p.csv"
    command = ["predict", "few-shot", "--support", str(tmp_path / "support.npz")]
    assert (
        main(
            command + ["--queries", str(tmp_path / "queries.npz"), "--method", "prototype", "--out", str(out)]
        )
        == 0
    )
    printed = capsys.readouterr().out
    rows = read_predictions(out)
    assert [row["id"] for row in rows] == list(rest.ids)
    accuracy = prediction_accuracy(rows)
    right = round(accuracy * len(rows))
    assert f"{right} of {len(rows)} match the file's labels ({100 * accuracy:.1f} %)" in printed


def test_predict_refuses_what_it_cannot_do_in_one_line(tmp_path, capsys):
    texts, _ = _user_texts(tmp_path, per_class=6)
    features = tmp_path / "texts.npz"
    main(["features", "embed-text", str(texts), "--encoder", "tfidf", "--out", str(features)])
    np.savez(tmp_path / "other.npz", features=np.zeros((2, 3)), labels=np.array([0, 1]))
    np.savez(tmp_path / "labelled.npz", features=np.zeros((2, 3)), labels=np.array([0, 1]))
    (tmp_path / "taken.csv").write_text("mine")
    base = ["predict", "few-shot", "--support"]
    cases = [
        (base + [str(features), "--out", str(tmp_path / "taken.csv")], "taken.csv exists; pass --overwrite"),
        (base + [str(features), "--out", str(tmp_path / "p.txt")], "must end in .csv"),
        (
            base + [str(tmp_path / "labelled.npz"), "--out", str(tmp_path / "p.csv")],
            "holds no unlabelled rows",
        ),
        (
            base
            + [str(features), "--queries", str(tmp_path / "other.npz"), "--out", str(tmp_path / "p.csv")],
            "the queries have 3 dimensions",
        ),
        (base + [str(features), "--method", "laplaceshot", "--out", str(tmp_path / "p.csv")], "did you mean"),
        (
            base + [str(features), "--preprocessing", "centre", "--out", str(tmp_path / "p.csv")],
            "base classes",
        ),
        (base + [str(features), "--device", "cuda:7", "--out", str(tmp_path / "p.csv")], "cuda"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        error = capsys.readouterr().err
        assert message in error and error.count("\n") == 1, (argv, error)
    assert (tmp_path / "taken.csv").read_text() == "mine" and not (tmp_path / "p.csv").exists()


def test_embed_text_refuses_mixed_or_unsafe_requests(tmp_path, capsys):
    texts, _ = _user_texts(tmp_path, per_class=4)
    cases = [
        ([str(texts), "--dataset", "clinc150", "--out", str(tmp_path / "a.npz")], "give FILE or --dataset"),
        (["--text-column", "x", "--out", str(tmp_path / "a.npz")], "--text-column applies to FILE"),
        ([str(texts), "--encoder", "tfidf", "--out", str(tmp_path / "a.csv")], "must end in .npz"),
    ]
    for argv, message in cases:
        assert main(["features", "embed-text"] + argv) == 2
        assert message in capsys.readouterr().err


def test_queries_beyond_one_task_are_solved_in_tasks_in_file_order():
    generator = torch.Generator().manual_seed(0)
    centres = torch.randn(3, 8, generator=generator) * 3
    support = FeatureSet(centres.repeat(2, 1), torch.arange(3).repeat(2), ("a", "b", "c"))
    queries = centres.repeat(5, 1) + torch.randn(15, 8, generator=generator)
    whole = classify_queries(support, queries, method="prototype")
    split = classify_queries(support, queries, method="prototype", max_queries_per_task=4)
    assert (whole.tasks, split.tasks) == (1, 4)
    assert torch.allclose(whole.probabilities, split.probabilities)  # inductive: the tasks do not matter
    transductive = classify_queries(support, queries, method="laplacianshot", max_queries_per_task=4)
    assert transductive.tasks == 4 and transductive.probabilities.shape == (15, 3)
    # a class named in the file without a labelled row is no class of the answer
    sparse = FeatureSet(support.features, support.labels, ("a", "b", "c", "unused"))
    assert classify_queries(sparse, queries, method="prototype").class_names == ("a", "b", "c")
    with pytest.raises(ValueError, match="1 class"):
        classify_queries(FeatureSet(centres[:1], torch.tensor([0]), ("a",)), queries)


def test_run_few_shot_takes_the_users_file_and_the_methods_new_and_former_names(tmp_path, capsys):
    texts, _ = _user_texts(tmp_path, per_class=20)
    features = tmp_path / "texts.npz"
    main(["features", "embed-text", str(texts), "--encoder", "tfidf", "--out", str(features)])
    run = ["run", "few-shot", "--dataset", str(features), "--studies", "ablation", "--shots", "1"]
    run += ["--queries", "5", "--tasks", "20", "--tasks-per-job", "20", "--no-progress"]
    assert main(run + ["--methods", "prototype,laplacianshot", "--out", str(tmp_path / "run")]) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert "laplacianshot" in json.dumps(results) and "diffusion" not in json.dumps(results["ablation"])
    # the report speaks of the user's file, not of the paper
    report = (tmp_path / "run" / "report.md").read_text()
    for paper_words in ("Table 2", "Fig. 6", "paper's", "miniImageNet"):
        assert paper_words not in report, paper_words
    assert "**texts** (`texts.npz`): 80 labelled rows of " in report
    assert "5 classes (banking, cooking, music, travel, weather); 20 unlabelled rows" in report
    settings = report.split("## Settings")[1]
    assert "| backbone_epochs |" not in settings and "| n_top_values |" not in settings
    assert "Left out, as they do nothing here: backbone_epochs, backbone_seed" in settings
    assert main(run + ["--methods", "diffusion", "--out", str(tmp_path / "old")]) == 0
    assert (
        "pdenets: warning: methods: the few-shot method 'diffusion' is now called 'laplacianshot'"
        in capsys.readouterr().err
    )
