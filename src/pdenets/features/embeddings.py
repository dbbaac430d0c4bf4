"""Features files built from raw data: a backbone trained on base classes embeds images; an encoder embeds
text.

The few-shot task reads features files (:mod:`pdenets.data.fewshot`). For the offline data it
builds them once and caches them under the features directory (``$PDENETS_FEATURES``, else
``~/.cache/pdenets/features``); the file name carries every setting that changes the
features, so a changed setting builds a new file and never reuses a stale one:

* ``omniglot``: a :class:`~pdenets.models.backbones.Conv4` trained on the base alphabets
  embeds base and novel characters (base features give the centering mean);
* ``omniglot-runs``: a Conv4 trained on every background character embeds the 20 official
  one-shot runs (:func:`official_runs_features`);
* ``clinc150``: utterances embedded by the packaged MiniLM (:mod:`pdenets.data.text`).

:func:`image_features` and :func:`train_image_backbone` do the same for a user's own image
folders (one sub-folder per class).
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ..data.fewshot import FeatureSet, load_features, save_features
from ..data.images import ImageSet
from ..models.backbones import BackboneTraining, Conv4, extract_features, train_backbone

__all__ = [
    "features_dir",
    "cached_features",
    "omniglot_features",
    "official_runs_features",
    "image_features",
    "train_image_backbone",
    "save_backbone",
    "load_backbone",
    "FEATURES_ENV_VAR",
]

FEATURES_ENV_VAR = "PDENETS_FEATURES"


def features_dir(directory: Optional[Union[str, Path]] = None) -> Path:
    if directory:
        return Path(directory).expanduser()
    env = os.environ.get(FEATURES_ENV_VAR)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "pdenets" / "features"


#: settings named in a features file's name only away from their defaults (the files built before they were
#: named keep their names)
_NAMED_AWAY_FROM_DEFAULT = (("momentum", "m"), ("weight_decay", "wd"), ("validation_fraction", "v"))


def _setting_tag(settings: BackboneTraining) -> str:
    """Every training setting that changes the features, in a file name.

    Examples:
        >>> _setting_tag(BackboneTraining())
        'e30-b128-lr0.1-r1-s2-seed0'
        >>> _setting_tag(BackboneTraining(momentum=0.0, weight_decay=1e-3))
        'e30-b128-lr0.1-r1-s2-seed0-m0-wd0.001'
    """
    values = asdict(settings)
    tag = "e{epochs}-b{batch_size}-lr{lr:g}-r{r}-s{max_shift}-seed{seed}".format(
        r=int(values["rotations"]), **values
    )
    defaults = asdict(BackboneTraining())
    for name, letter in _NAMED_AWAY_FROM_DEFAULT:
        if values[name] != defaults[name]:
            tag += f"-{letter}{values[name]:g}"
    return tag


def cached_features(
    name: str,
    build: Callable[[], FeatureSet],
    directory: Optional[Union[str, Path]] = None,
    *,
    progress: bool = False,
) -> Tuple[Path, FeatureSet]:
    """``directory/name.npz`` if it exists, else built, written (atomically) and returned."""
    path = features_dir(directory) / f"{name}.npz"
    if path.is_file():
        return path, load_features(path)
    if progress:
        print(f"building features {path} (cached for later runs)", flush=True)
    features = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_features(features, path, overwrite=True)
    return path, load_features(path)


def train_image_backbone(
    images: ImageSet, settings: BackboneTraining, *, progress: bool = False, device: str = "cpu"
):
    """A :class:`Conv4` trained on ``images`` (with a progress bar); returns ``(model, history)``."""
    from tqdm.auto import tqdm

    bar = tqdm(total=settings.epochs, desc="training backbone", disable=not progress, leave=False)

    def report(epoch: int, metrics: Dict[str, float]) -> None:
        bar.update(1)
        bar.set_postfix({k: f"{v:.3f}" for k, v in metrics.items()}, refresh=False)

    try:
        return train_backbone(images.images, images.labels, settings, progress=report, device=device)
    finally:
        bar.close()


def image_features(model: Conv4, sets: Dict[str, ImageSet]) -> FeatureSet:
    """Embed several image sets (``{"base": …, "val": …, "novel": …}``) into one :class:`FeatureSet`."""
    blocks: List[torch.Tensor] = []
    labels: List[torch.Tensor] = []
    names: List[str] = []
    splits: Dict[str, Tuple[int, ...]] = {"base": (), "val": (), "novel": ()}
    for split, images in sets.items():
        offset = len(names)
        blocks.append(extract_features(model, images.images))
        labels.append(images.labels + offset)
        names += list(images.class_names)
        splits[split] = tuple(range(offset, len(names)))
    return FeatureSet(
        torch.cat(blocks),
        torch.cat(labels),
        tuple(names),
        base_classes=splits["base"],
        val_classes=splits["val"],
        novel_classes=splits["novel"],
        source="images embedded by a Conv4 trained on the base classes",
    )


def omniglot_features(
    data_dir=None,
    settings: BackboneTraining = BackboneTraining(),
    *,
    directory: Optional[Union[str, Path]] = None,
    progress: bool = False,
) -> Tuple[Path, FeatureSet]:
    """Base and novel Omniglot characters embedded by a Conv4 trained on the base alphabets (cached)."""
    from ..data.omniglot import BASE_ALPHABETS, NOVEL_ALPHABETS, omniglot_images

    def build() -> FeatureSet:
        base = omniglot_images(BASE_ALPHABETS, data_dir, progress=progress)
        novel = omniglot_images(NOVEL_ALPHABETS, data_dir, progress=progress)
        model, _ = train_image_backbone(base, settings, progress=progress)
        return image_features(model, {"base": base, "novel": novel})

    return cached_features(f"omniglot-conv4-{_setting_tag(settings)}", build, directory, progress=progress)


def official_runs_features(
    data_dir=None,
    settings: BackboneTraining = BackboneTraining(),
    *,
    directory: Optional[Union[str, Path]] = None,
    progress: bool = False,
) -> Tuple[Path, Dict[str, np.ndarray]]:
    """The 20 one-shot runs embedded by a Conv4 trained on all 242 background characters (cached).

    Returns arrays ``training (20, 20, D)``, ``test (20, 20, D)``, ``answers (20, 20)`` and
    ``base_mean (D,)``.
    """
    from .._io import atomic_write
    from ..data.graphs import read_npz_arrays
    from ..data.omniglot import load_one_shot_runs, omniglot_images

    path = features_dir(directory) / f"omniglot-runs-conv4-{_setting_tag(settings)}.npz"
    if not path.is_file():
        background = omniglot_images(None, data_dir, progress=progress)
        model, _ = train_image_backbone(background, settings, progress=progress)
        runs = load_one_shot_runs(data_dir)
        arrays = {
            "training": np.stack([extract_features(model, r.training).numpy() for r in runs]),
            "test": np.stack([extract_features(model, r.test).numpy() for r in runs]),
            "answers": np.stack([r.answers.numpy() for r in runs]),
            "base_mean": extract_features(model, background.images).mean(0).numpy(),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, "wb") as stream:
            np.savez(stream, **arrays)  # type: ignore[arg-type]  # mypy also matches **arrays to allow_pickle: bool
    return path, read_npz_arrays(path)


def save_backbone(
    model: Conv4,
    path: Union[str, Path],
    *,
    classes: Sequence[str],
    settings: BackboneTraining,
    image_size: int,
    channels: int,
) -> Path:
    """Weights and what is needed to rebuild the network, in one ``torch.save`` file of tensors and plain
    values."""
    from .._io import atomic_write

    document = {
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "classes": list(classes),
        "settings": asdict(settings),
        "image_size": image_size,
        "channels": channels,
        "embedding_dim": model.embedding_dim,
    }
    with atomic_write(path, "wb") as stream:
        torch.save(document, stream)
    return Path(path)


def load_backbone(path: Union[str, Path]) -> Tuple[Conv4, Dict]:
    """A backbone written by :func:`save_backbone` (read with ``weights_only=True``).

    The file's size, and its data with every shared tensor counted as a copy, are checked
    against the memory budget (:mod:`pdenets.data.limits`) before anything is built from it.
    """
    from ..data.errors import DatasetError, DatasetNotFoundError
    from ..data.limits import check_allocation, check_expanded
    from ..data.paths import regular_file

    path = regular_file(path, DatasetNotFoundError(f"missing backbone file {path}"))
    check_allocation(path.stat().st_size, 1, "the file", path)
    try:
        document = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many types for a bad or unsafe file
        raise DatasetError(
            f"{path}: not a pdenets backbone file ({type(error).__name__}: "
            f"{(str(error).splitlines() or ['no message'])[0]})"
        ) from None
    check_expanded(document, "its data", path)
    try:
        state = document["state_dict"]
        model = Conv4(
            int(document["channels"]),
            state["head.weight"].shape[0] if "head.weight" in state else 0,
            image_size=int(document["image_size"]),
        )
        model.load_state_dict(state)
    except Exception as error:  # a file of another layout
        raise DatasetError(
            f"{path}: not a pdenets backbone file ({type(error).__name__}: "
            f"{(str(error).splitlines() or ['no message'])[0]})"
        ) from None
    model.eval()
    return model, document
