"""``pdenets features ...``: build few-shot features files from images or text.

    pdenets features train-backbone --dataset omniglot --out runs/backbone
    pdenets features train-backbone --images my_images/train --image-size 84 --channels 3 --out runs/bb
    pdenets features extract --backbone runs/backbone/backbone.pt --dataset omniglot --out omniglot.npz
    pdenets features extract --backbone runs/bb/backbone.pt --images my_images/test --base-images
    my_images/train \\
        --out mine.npz
    pdenets features embed-text --dataset clinc150 --out clinc150.npz
    pdenets features embed-text my_intents.csv --encoder tfidf --out my_intents.npz

The features file is the format :func:`pdenets.data.fewshot.load_features` reads; give it to
``pdenets run few-shot --dataset FILE.npz``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import List, Optional

from .data.fewshot import save_features
from .data.images import ImageSet, load_image_tree
from .experiments.plots import plt
from .experiments.report import Report
from .experiments.rundir import RunDirectory
from .features import image_features, load_backbone, save_backbone, train_image_backbone
from .features.datasets import FEWSHOT_DATASETS, IMAGE_SPLITS, FewShotDataset
from .features.text_encoders import text_file_features
from .models.backbones import BackboneTraining

__all__ = ["run_features_command"]


def _classes(text: Optional[str]) -> Optional[List[str]]:
    return None if not text else [name.strip() for name in text.split(",") if name.strip()]


def _images(args, sources, size: int, channels: int, invert: bool, classes=None) -> ImageSet:
    return load_image_tree(
        sources, size=size, channels=channels, invert=invert, classes=classes, progress=not args.no_progress
    )


def _dataset(args, modality: str) -> Optional[FewShotDataset]:
    """The registered few-shot dataset that ``--dataset`` names (of the action's modality), or ``None``."""
    if args.dataset is None:
        if modality == "images" and not getattr(args, "images", None):
            raise ValueError(f"give --dataset {_names(modality, ' or ')} or --images PATH")
        if modality == "text":
            raise ValueError(f"give --dataset {_names(modality, ' or ')}")
        return None
    entry = FEWSHOT_DATASETS[args.dataset.lower()]  # an unknown name: UnknownNameError, with the closest name
    if entry.modality != modality:
        other = "embed-text" if entry.modality == "text" else "train-backbone / extract"
        raise ValueError(f"--dataset {args.dataset!r} is a {entry.modality} dataset: use {other}")
    return entry


def _names(modality: str, last: str = ", ") -> str:
    """The registered datasets of a modality, e.g. ``omniglot``, for messages."""
    names = [name for name, entry in FEWSHOT_DATASETS.items() if entry.modality == modality] or ["NAME"]
    return ", ".join(names[:-1]) + last + names[-1] if len(names) > 1 else names[0]


def _dataset_images(args, entry: FewShotDataset, split: str, size: int = 28) -> ImageSet:
    assert entry.images is not None  # an image dataset (checked by _dataset)
    return entry.images(split, args.data_dir, size, not args.no_progress)


def _train(args) -> int:
    dataset = _dataset(args, "images")
    if args.epochs < 1:
        raise ValueError(f"--epochs must be >= 1, got {args.epochs}")
    settings = BackboneTraining(epochs=args.epochs, seed=args.seed, rotations=not args.no_rotations)
    with RunDirectory.open(args.out, task="train-backbone", overwrite=args.overwrite) as run_dir:
        if dataset is not None:
            images, size, channels, invert = _dataset_images(args, dataset, "base"), 28, 1, True
        else:
            size, channels, invert = args.image_size, args.channels, args.invert
            images = _images(args, args.images, size, channels, invert, _classes(args.classes))
        run_dir.write_config(
            "train-backbone",
            {
                **vars(settings),
                "dataset": args.dataset,
                "images": args.images,
                "image_size": size,
                "channels": channels,
                "invert": invert,
                "classes": len(images.class_names),
            },
        )
        start = time.perf_counter()
        model, history = train_image_backbone(images, settings, progress=not args.no_progress)
        seconds = time.perf_counter() - start
        save_backbone(
            model,
            run_dir.file("backbone.pt"),
            classes=images.class_names,
            settings=settings,
            image_size=size,
            channels=channels,
        )
        run_dir.register(run_dir.file("backbone.pt"))
        results = {
            "classes": len(images.class_names),
            "images": len(images),
            "seconds": seconds,
            "train_loss": history.train_loss,
            "train_accuracy": history.train_accuracy,
            "validation_accuracy": history.validation_accuracy,
            "embedding_dim": model.embedding_dim,
        }
        run_dir.write_results(results)
        fig, ax = plt.subplots(figsize=(5.5, 3.4), layout="constrained")
        epochs = range(1, len(history.train_loss) + 1)
        ax.plot(epochs, history.train_accuracy, label="training accuracy")
        ax.plot(epochs, history.validation_accuracy, label="held-out accuracy (10 % of each class)")
        ax.set_xlabel("epoch")
        ax.set_ylabel("accuracy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        figure = run_dir.save_figure(fig, "training.png")
        report = Report("pdenets — Conv-4 backbone")
        report.paragraph(
            f"{len(images)} images of {len(images.class_names)} classes"
            f"{' (x4 with rotations)' if settings.rotations else ''}, {size}x{size}, {settings.epochs} "
            f"epochs in {seconds:.0f} s; embedding dimension {model.embedding_dim}. Final held-out "
            f"accuracy {history.validation_accuracy[-1]:.3f}."
        )
        report.figure(figure, "Accuracy during training.")
        report.code(json.dumps(vars(settings), indent=1))
        report.write(run_dir)
    print(f"backbone written to {Path(args.out) / 'backbone.pt'}")
    return 0


def _extract(args) -> int:
    dataset = _dataset(args, "images")
    out = Path(args.out)
    if out.exists() and not args.overwrite:
        raise ValueError(f"{out} exists; pass --overwrite to replace it")
    model, document = load_backbone(args.backbone)
    size, channels = int(document["image_size"]), int(document["channels"])
    if dataset is not None:
        sets = {split: _dataset_images(args, dataset, split, size) for split in IMAGE_SPLITS}
    else:
        invert = bool(document.get("settings", {}).get("invert", False))
        sets = {}
        if args.base_images:
            sets["base"] = _images(args, args.base_images, size, channels, invert)
        sets["novel"] = _images(args, args.images, size, channels, invert, _classes(args.classes))
    features = image_features(model, sets)
    save_features(features, out, overwrite=args.overwrite)
    print(
        f"{len(features.labels)} embeddings of {features.num_classes} classes ({features.dim} dimensions) "
        f"written to {out}"
    )
    return 0


def _embed_text(args) -> int:
    if args.file is not None and args.dataset is not None:
        raise ValueError("give FILE or --dataset, not both")
    columns = {
        "text_column": args.text_column,
        "label_column": args.label_column,
        "id_column": args.id_column,
    }
    if args.file is None:
        given = [f"--{name.replace('_', '-')}" for name, value in columns.items() if value is not None]
        if given or args.encoder != "auto":
            raise ValueError(f"{', '.join(given) or '--encoder'} applies to FILE, not to --dataset")
        args.dataset = args.dataset or "clinc150"
    out = Path(args.out)
    if out.suffix != ".npz":
        raise ValueError(f"--out {out}: the features file name must end in .npz")
    if out.exists() and not args.overwrite:
        raise ValueError(f"{out} exists; pass --overwrite to replace it")
    if args.file is not None:
        if Path(args.file).resolve() == out.resolve():
            raise ValueError(f"--out {out} is FILE itself: a features file never replaces your texts")
        features = text_file_features(args.file, args.encoder, progress=not args.no_progress, **columns)
    else:
        dataset = _dataset(args, "text")
        assert dataset is not None and dataset.embed is not None  # a text dataset (checked by _dataset)
        features = dataset.embed(args.data_dir, not args.no_progress)
    save_features(features, out, overwrite=args.overwrite)
    unlabelled = 0 if features.unlabelled is None else features.unlabelled.shape[0]
    print(
        f"{len(features.labels)} text embeddings of {features.num_classes} classes"
        + (f" and {unlabelled} unlabelled to classify" if unlabelled else "")
        + f" ({features.dim} dimensions) written to {out}"
    )
    return 0


def run_features_command(args) -> int:
    return {"train-backbone": _train, "extract": _extract, "embed-text": _embed_text}[args.action](args)
