"""Labelled images from folders or zip archives, loaded in plain torch (no torchvision).

A dataset of images is a tree in which every folder that directly holds image files is one
class, named by its path relative to the root (``Greek/character03``). The same layout is
read from a folder on disk or from inside a ``.zip`` archive (the Omniglot files), so a
user's own image folder goes through exactly the same code as the offline data.

Images are converted to grayscale or RGB, resized to ``size × size`` (bilinear), scaled to
``[0, 1]`` and optionally inverted (Omniglot draws black strokes on white).
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from .errors import DatasetError, DatasetNotFoundError
from .limits import check_allocation
from .paths import regular_file

__all__ = ["ImageSet", "load_image_tree", "decode_image", "IMAGE_SUFFIXES", "random_shift"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff")


@dataclass(frozen=True)
class ImageSet:
    """``images`` ``(N, channels, size, size)`` float32 in [0, 1], ``labels`` ``(N,)``, ``class_names``."""

    images: torch.Tensor
    labels: torch.Tensor
    class_names: Tuple[str, ...]
    source: str = ""

    def __len__(self) -> int:
        return int(self.images.shape[0])

    def select(self, classes: Iterable[str]) -> "ImageSet":
        """The samples of the named classes, relabelled ``0 … k−1`` in the order given."""
        wanted = list(classes)
        index = {name: i for i, name in enumerate(self.class_names)}
        missing = [name for name in wanted if name not in index]
        if missing:
            raise ValueError(f"classes {missing[:5]} are not in {self.source}")
        old = torch.tensor([index[name] for name in wanted])
        mask = torch.isin(self.labels, old)
        remap = torch.full((len(self.class_names),), -1, dtype=torch.long)
        remap[old] = torch.arange(len(wanted))
        return ImageSet(self.images[mask], remap[self.labels[mask]], tuple(wanted), self.source)


def decode_image(
    data: bytes, *, size: int, channels: int = 1, invert: bool = False, name: str = ""
) -> torch.Tensor:
    """One encoded image → ``(channels, size, size)`` float32 in [0, 1]."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            # Pillow defines BILINEAR in a loop its annotations do not show (Image.Resampling needs 9.1)
            bilinear = Image.BILINEAR  # type: ignore[attr-defined]
            image = image.convert("L" if channels == 1 else "RGB").resize((size, size), bilinear)
            array = np.asarray(image, dtype=np.float32) / 255.0
    except (UnidentifiedImageError, OSError, ValueError) as error:
        raise DatasetError(f"{name}: not a readable image ({error})") from None
    if invert:
        array = 1.0 - array
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    return tensor[None] if channels == 1 else tensor.permute(2, 0, 1).contiguous()


def _entries(source: Path, prefix: Optional[str]) -> List[Tuple[str, str]]:
    """``(class name, member)`` of every image under ``source`` (a folder or a zip)."""
    found = []
    if source.is_dir():
        for path in sorted(source.rglob("*")):
            if path.suffix.lower() in IMAGE_SUFFIXES and path.is_file():
                found.append((path.parent.relative_to(source).as_posix(), str(path)))
    else:
        with zipfile.ZipFile(source) as archive:
            for name in sorted(archive.namelist()):
                member = PurePosixPath(name)
                if member.suffix.lower() not in IMAGE_SUFFIXES:
                    continue
                parts = member.parent.parts
                if prefix is not None:
                    if not parts or parts[0] != prefix:
                        continue
                    parts = parts[1:]
                found.append(("/".join(parts), name))
    return found


def load_image_tree(
    sources: Union[str, Path, Sequence[Union[str, Path]]],
    *,
    size: int,
    channels: int = 1,
    invert: bool = False,
    classes: Optional[Iterable[str]] = None,
    root_in_zip: Optional[str] = None,
    progress: bool = False,
) -> ImageSet:
    """Read every image under one or more folders/zips; each leaf folder is a class.

    Args:
        sources: folders or ``.zip`` files; a class found in several (Omniglot's Greek and
            Latin are in both small zips) is read once, from the first.
        size: images are resized to ``size × size``.
        channels: 1 (grayscale) or 3 (RGB).
        invert: ``1 − pixel`` (strokes become 1).
        classes: keep only classes whose name starts with one of these (e.g. alphabets).
        root_in_zip: inside a zip, classes are below this first folder; default: the
            archive's single top folder if it has one.
    """
    if isinstance(sources, (str, Path)):
        sources = [sources]
    prefixes = tuple(classes) if classes is not None else None
    members: Dict[str, List[Tuple[Path, str]]] = {}
    for source in map(Path, sources):
        if not source.is_dir():
            regular_file(source, DatasetNotFoundError(f"missing image folder or archive {source}"))
        prefix = root_in_zip
        if source.is_file():
            try:
                with zipfile.ZipFile(source) as archive:
                    tops = {PurePosixPath(n).parts[0] for n in archive.namelist() if PurePosixPath(n).parts}
            except zipfile.BadZipFile:
                raise DatasetError(f"{source}: not a folder nor a readable .zip archive") from None
            if prefix is None and len(tops) == 1:
                prefix = next(iter(tops))
        seen_here = {}
        for class_name, member in _entries(source, prefix):
            if prefixes is not None and not any(
                class_name == p or class_name.startswith(p + "/") for p in prefixes
            ):
                continue
            if class_name in members and class_name not in seen_here:
                continue  # already read from an earlier source
            seen_here[class_name] = True
            members.setdefault(class_name, []).append((source, member))
    if not members:
        raise DatasetError(
            f"no images ({', '.join(IMAGE_SUFFIXES)}) found under {', '.join(map(str, sources))}"
            + (f" for classes {list(prefixes)[:5]}" if prefixes else "")
        )
    count = sum(len(v) for v in members.values())
    check_allocation(count * channels * size * size, 4, f"{count} images of {size}x{size}", sources[0])
    names = sorted(members)
    images = torch.empty(count, channels, size, size)
    labels = torch.empty(count, dtype=torch.long)
    archives: Dict[Path, zipfile.ZipFile] = {}
    position = 0
    try:
        from tqdm.auto import tqdm

        for label, name in enumerate(tqdm(names, desc="reading images", disable=not progress, leave=False)):
            for source, member in members[name]:
                if source.is_dir():
                    data = Path(member).read_bytes()
                else:
                    if source not in archives:
                        archives[source] = zipfile.ZipFile(source)
                    data = archives[source].read(member)
                images[position] = decode_image(
                    data,
                    size=size,
                    channels=channels,
                    invert=invert,
                    name=f"{source}:{member}" if source.is_file() else member,
                )
                labels[position] = label
                position += 1
    finally:
        for archive in archives.values():
            archive.close()
    return ImageSet(images, labels, tuple(names), ", ".join(map(str, sources)))


def random_shift(images: torch.Tensor, max_shift: int, generator: torch.Generator) -> torch.Tensor:
    """Pad by ``max_shift`` (zeros) and crop back at a random offset per image: translation augmentation.

    The offsets are drawn from ``generator`` (on the CPU: the same draws on every device) and applied where
    the images are."""
    if max_shift <= 0:
        return images
    batch, _, height, width = images.shape
    device = images.device
    padded = torch.nn.functional.pad(images, (max_shift,) * 4)
    offsets = torch.randint(0, 2 * max_shift + 1, (batch, 2), generator=generator).to(device)
    rows = offsets[:, 0, None] + torch.arange(height, device=device)[None, :]
    cols = offsets[:, 1, None] + torch.arange(width, device=device)[None, :]
    index = torch.arange(batch, device=device)[:, None, None]
    return (
        padded.permute(0, 2, 3, 1)[index, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2).contiguous()
    )
