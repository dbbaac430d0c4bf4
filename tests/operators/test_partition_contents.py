"""A part file is checked against its manifest whatever its hash says (a hash recomputed after an edit):
its nodes are the order's slice, its weights finite and non-negative, its labels class ids, its features the
manifest's width; a file of another size than recorded is refused by its size."""

import hashlib
import json

import numpy as np
import pytest
import torch

from pdenets.operators import PartitionError, gcn_normalize, load_part, partition_graph, save_partition


@pytest.fixture
def saved(tmp_path):
    nodes = 12
    pairs = [(i, (i + 1) % nodes) for i in range(nodes)] + [(i, (i + 5) % nodes) for i in range(0, nodes, 3)]
    edge_index = torch.tensor(pairs + [(j, i) for i, j in pairs]).T
    weights = gcn_normalize((edge_index, None), nodes).to(torch.float64)
    partition = partition_graph(weights, 3, method="contiguous")
    features, labels = torch.arange(2.0 * nodes).reshape(nodes, 2), torch.arange(nodes) % 3
    return save_partition(tmp_path / "parts", partition, weights, features=features, labels=labels)


def _rehash(folder, name, *, keep_bytes=False):
    facts = json.loads((folder / "partition.json").read_text())
    data = (folder / name).read_bytes()
    facts["files"][name]["sha256"] = hashlib.sha256(data).hexdigest()
    if not keep_bytes:
        facts["files"][name]["bytes"] = len(data)
    (folder / "partition.json").write_text(json.dumps(facts))


def _arrays(folder, part):
    with np.load(folder / f"part-{part}.npz", allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def _save(folder, part, arrays):
    with open(folder / f"part-{part}.npz", "wb") as handle:
        np.savez(handle, **arrays)
    _rehash(folder, f"part-{part}.npz")


def _nan_first(values):
    values = values.copy()
    values[0] = np.nan
    return values


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: a.update(nodes=np.array([0, 1, 2, 8])), "its nodes are not order.npy[0:4]"),  # 8: part 2's
        (lambda a: a.update(nodes=a["nodes"][::-1].copy()), "its nodes are not order.npy[0:4]"),
        (lambda a: a.update(values=_nan_first(a["values"])), "NaN/inf weights"),
        (lambda a: a.update(values=-a["values"]), "negative weights"),
        (lambda a: a.update(labels=np.array([0, 99, 2, 0])), "labels must be class ids in 0…2"),
        (lambda a: a.update(labels=np.array([0, -5, 2, 0])), "labels must be class ids in 0…2"),
        (lambda a: a.update(labels=a["labels"].astype(np.float64)), "labels hold float64"),
        (lambda a: a.update(features=np.zeros((4, 3))), "features must be a (4, 2) array"),
        (lambda a: a.update(features=np.full((4, 2), np.nan)), "features hold NaN/inf"),
    ],
)
def test_part_contents_that_disagree_with_the_manifest_are_refused_despite_a_forged_hash(
    saved, change, message
):
    arrays = _arrays(saved, 0)
    change(arrays)
    _save(saved, 0, arrays)
    with pytest.raises(PartitionError) as caught:
        load_part(saved, 0)
    assert str(caught.value).startswith(f"{saved / 'part-0.npz'}: ") and message in str(caught.value)


def test_an_order_that_is_another_permutation_is_refused_by_load_part(saved):
    order = np.load(saved / "order.npy")
    np.save(saved / "order.npy", order[::-1].copy())
    _rehash(saved, "order.npy")
    with pytest.raises(PartitionError, match=r"its nodes are not order\.npy\[4:8\]"):
        load_part(saved, 1)


@pytest.mark.parametrize("name", ["part-0.npz", "order.npy"])
def test_a_file_whose_size_differs_from_the_manifest_is_refused_even_with_its_hash(saved, name):
    with open(saved / name, "ab") as handle:
        handle.write(b"\0" * 16)
    _rehash(saved, name, keep_bytes=True)
    recorded = json.loads((saved / "partition.json").read_text())["files"][name]["bytes"]
    with pytest.raises(PartitionError) as caught:
        load_part(saved, 0)
    assert str(caught.value) == (
        f"{saved / name}: {recorded + 16:,} bytes where partition.json records {recorded:,}: a damaged file, "
        "or one of another partition"
    )
