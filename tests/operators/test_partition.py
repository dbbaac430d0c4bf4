"""A saved partition cannot lie: every tampering with its files is refused in one line naming the file.

Each case changes one thing of a partition saved by ``save_partition``: a file changed without its manifest
(its SHA-256 no longer matches), or changed *with* a manifest rewritten to match (so the check behind the
hash is the one that must see it): the order, the offsets, a part's arrays, the sizes declared."""

import hashlib
import json

import numpy as np
import pytest
import torch

from pdenets.operators import (
    PartitionError,
    gcn_normalize,
    load_part,
    load_partition,
    partition_graph,
    save_partition,
)

pytestmark = pytest.mark.cpu_only("saved partitions are files on the host: SciPy rows, NumPy arrays")


@pytest.fixture
def saved(tmp_path):
    """A 12-node ring with chords, in 3 contiguous parts, with features and labels."""
    nodes = 12
    pairs = [(i, (i + 1) % nodes) for i in range(nodes)] + [(i, (i + 5) % nodes) for i in range(0, nodes, 3)]
    edge_index = torch.tensor(pairs + [(j, i) for i, j in pairs]).T
    weights = gcn_normalize((edge_index, None), nodes).to(torch.float64)
    partition = partition_graph(weights, 3, method="contiguous")
    features, labels = torch.arange(2.0 * nodes).reshape(nodes, 2), torch.arange(nodes) % 3
    return save_partition(tmp_path / "parts", partition, weights, features=features, labels=labels)


def _manifest(folder):
    return json.loads((folder / "partition.json").read_text())


def _write_manifest(folder, facts):
    (folder / "partition.json").write_text(json.dumps(facts))


def _rehash(folder, name, *, keep_bytes=False):
    """The manifest rewritten to match ``name`` as it now is (a tampering that also forges the hash; with
    ``keep_bytes``, the hash alone)."""
    facts = _manifest(folder)
    data = (folder / name).read_bytes()
    facts["files"][name]["sha256"] = hashlib.sha256(data).hexdigest()
    if not keep_bytes:
        facts["files"][name]["bytes"] = len(data)
    _write_manifest(folder, facts)


def _part_arrays(folder, part):
    with np.load(folder / f"part-{part}.npz", allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def _save_part(folder, part, arrays):
    with open(folder / f"part-{part}.npz", "wb") as handle:
        np.savez(handle, **arrays)
    _rehash(folder, f"part-{part}.npz")


def test_an_untouched_partition_loads(saved):
    partition = load_partition(saved)
    assert partition.offsets.tolist() == [0, 4, 8, 12] and partition.seed == 0
    part = load_part(saved, 1)
    assert part.first == 4 and part.nodes.tolist() == [4, 5, 6, 7] and part.labels.tolist() == [1, 2, 0, 1]
    facts = _manifest(saved)
    assert (facts["num_parts"], facts["num_nodes"], facts["method"], facts["seed"]) == (
        3,
        12,
        "contiguous",
        0,
    )
    assert sum(part["nnz"] for part in facts["parts"]) == facts["nnz"] == 2 * 16 + 12  # GCN self-loops
    assert sorted(facts["files"]) == ["order.npy", "part-0.npz", "part-1.npz", "part-2.npz"]


def test_an_order_that_repeats_a_node_and_drops_another_is_refused(saved):
    order = np.load(saved / "order.npy")
    order[3] = order[2]  # node 2 twice, node 3 never
    np.save(saved / "order.npy", order)
    with pytest.raises(PartitionError, match=r"order\.npy: its SHA-256 differs from partition\.json's"):
        load_partition(saved)
    _rehash(saved, "order.npy")
    with pytest.raises(PartitionError) as caught:
        load_partition(saved)
    assert str(caught.value) == (
        f"{saved / 'order.npy'}: the order is not a permutation of 0…11 "
        "(node 2 appears 2 times, node 3 never)"
    )


@pytest.mark.parametrize(
    "offsets, message",
    [
        ([0, 5, 4, 12], "the offsets must tile 0…12 in increasing parts of at least one node"),  # overlap
        ([0, 4, 8, 11], "the offsets must tile 0…12"),  # a gap at the end
        ([0, 4, 4, 12], "the offsets must tile 0…12"),  # an empty part
        ([0, 4, 12], "offsets must be 4 whole numbers"),
        ([0, 4.0, 8, 12], "offsets must be 4 whole numbers"),
    ],
)
def test_offsets_that_overlap_leave_gaps_or_miscount_are_refused(saved, offsets, message):
    facts = _manifest(saved)
    facts["offsets"] = offsets
    _write_manifest(saved, facts)
    for load in (load_partition, lambda folder: load_part(folder, 0)):
        with pytest.raises(PartitionError, match=str(saved / "partition.json")) as caught:
            load(saved)
        assert message in str(caught.value)


def test_a_part_copied_over_another_is_refused(saved):
    (saved / "part-0.npz").write_bytes((saved / "part-1.npz").read_bytes())
    with pytest.raises(PartitionError) as caught:
        load_part(saved, 0)
    assert str(caught.value).startswith(f"{saved / 'part-0.npz'}: ")
    assert "a damaged file, or one of another partition" in str(caught.value) or "SHA-256" in str(
        caught.value
    )
    assert load_part(saved, 1).first == 4  # the other parts still load


def test_declared_sizes_beyond_the_budget_are_refused_before_allocating(saved, monkeypatch):
    facts = _manifest(saved)
    facts["num_nodes"] = 10**12
    facts["offsets"][-1] = 10**12
    _write_manifest(saved, facts)
    with pytest.raises(
        PartitionError, match=r"the order of its nodes would need 7\.3 TiB, more than the memory"
    ):
        load_partition(saved)
    facts["num_nodes"], facts["offsets"][-1] = 12, 12
    facts["parts"][0]["first"] = 2**62
    _write_manifest(saved, facts)
    with pytest.raises(PartitionError, match="part 0 must start at node 0 with 4 rows"):
        load_part(saved, 0)
    facts["parts"][0]["first"] = 0
    _write_manifest(saved, facts)
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "100")
    with pytest.raises(
        PartitionError, match=r"part-0\.npz: its arrays would need .* more than the memory budget 100 B"
    ):
        load_part(saved, 0)


def test_part_files_hold_plain_arrays_only(saved):
    arrays = _part_arrays(saved, 0)
    arrays["labels"] = np.array([[1, [2]], [3, 4]], dtype=object)  # pickled Python objects
    with open(saved / "part-0.npz", "wb") as handle:
        np.savez(handle, **arrays)
    _rehash(saved, "part-0.npz")
    with pytest.raises(PartitionError, match=r"part-0\.npz: labels holds object \(pickled Python objects"):
        load_part(saved, 0)
    (saved / "part-0.npz").write_bytes(b"PK\x03\x04 not a zip at all")
    _rehash(saved, "part-0.npz")
    with pytest.raises(PartitionError, match=r"part-0\.npz: not a \.npz archive"):
        load_part(saved, 0)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: a.update(indices=a["indices"] + 100), "a column id lies outside 0…11"),
        (lambda a: a.update(indptr=a["indptr"][::-1].copy()), "indptr must rise from 0 to nnz"),
        (lambda a: a.update(nodes=np.zeros(4, dtype=np.int64)), "its nodes must be 4 distinct ids"),
        (lambda a: a.pop("values"), "holds no values array"),
        (lambda a: a.update(values=a["values"].astype(np.int64)), "values hold int64, not floating-point"),
        (lambda a: a.update(labels=a["labels"][:2]), "labels has shape (2,), not (4,)"),
        # checked against the manifest whatever the hash says (it is forged by _save_part)
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
def test_a_part_whose_arrays_disagree_with_the_manifest_is_refused(saved, change, message):
    arrays = _part_arrays(saved, 0)
    change(arrays)
    _save_part(saved, 0, arrays)
    with pytest.raises(PartitionError) as caught:
        load_part(saved, 0)
    assert str(caught.value).startswith(f"{saved / 'part-0.npz'}: ") and message in str(caught.value)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda path: path.write_text("{not json"), "partition.json: not JSON"),
        (lambda path: path.write_text("[1, 2]"), "not a pdenets partition manifest"),
        (
            lambda path: path.write_text(json.dumps({"format": "pdenets-partition-1", "num_parts": 2})),
            "written by an earlier pdenets (pdenets-partition-1: pickled part files, no hashes)",
        ),
        (lambda path: path.write_text(json.dumps({"format": "pdenets-partition-3"})), "num_parts must be"),
        (lambda path: path.write_text("[" * 100_000 + "]" * 100_000), "partition.json: not JSON"),
    ],
)
def test_a_broken_manifest_is_one_line_naming_it(saved, edit, message):
    edit(saved / "partition.json")
    with pytest.raises(PartitionError) as caught:
        load_part(saved, 0)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_manifest_field_corrupted_is_named(saved):
    """Each count of the manifest, corrupted alone."""
    for field, value, message in (
        ("nnz", 43, "the parts hold 44 entries, not nnz = 43"),
        ("seed", -1, "the partitioner (method) and its seed"),
        ("num_parts", 2, "offsets must be 3 whole numbers"),
        ("num_nodes", 13, "the offsets must tile 0…13"),
        ("files", {"order.npy": {}}, "files must list order.npy and part-0.npz"),
    ):
        facts = _manifest(saved)
        original = facts[field]
        facts[field] = value
        _write_manifest(saved, facts)
        with pytest.raises(PartitionError, match=str(saved / "partition.json")) as caught:
            load_part(saved, 0)
        assert message in str(caught.value), field
        facts[field] = original
        _write_manifest(saved, facts)
    assert load_part(saved, 0).first == 0


def test_metis_without_pymetis_is_refused_naming_the_extra(monkeypatch, saved):
    import sys

    from pdenets.experiments import ConfigError
    from pdenets.models.partitioned import agreed_partition
    from pdenets.tasks.node_classification.config import NodeClassificationConfig

    monkeypatch.setitem(sys.modules, "pymetis", None)  # import pymetis raises ImportError
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "pymetis" else object())
    weights = torch.eye(4).to_sparse()
    with pytest.raises(ImportError, match=r"pip install 'pdenets\[graphs\]' \(pymetis\)"):
        partition_graph(weights, 2, method="metis")
    with pytest.raises(ImportError, match=r"partition=metis needs METIS: pip install 'pdenets\[graphs\]'"):
        agreed_partition(weights, "metis")
    with pytest.raises(ConfigError, match=r"partition=metis needs METIS"):
        NodeClassificationConfig(partition="metis").validate()


# ----------------------------------------------------------------------------------------
# A part checked against its manifest whatever its hash says (a hash recomputed after an edit): its nodes are
# the order's slice, its weights finite and non-negative, its labels class ids, its features the manifest's
# width; a file of another size than recorded is refused by its size.


def _nan_first(values):
    values = values.copy()
    values[0] = np.nan
    return values


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


def test_save_partition_refuses_what_load_part_would_refuse(tmp_path):
    """Float labels (never rounded), labels below -1 and NaN features are refused before a file is written."""
    nodes = 6
    ring = torch.tensor([[i for i in range(nodes)], [(i + 1) % nodes for i in range(nodes)]])
    weights = gcn_normalize((torch.cat([ring, ring.flip(0)], 1), None), nodes).to(torch.float64)
    partition = partition_graph(weights, 2, method="contiguous")
    for changes, message in (
        ({"labels": torch.tensor([0, 1.5, 0, 1, 0, 1])}, "labels must hold integers"),
        ({"labels": torch.tensor([0, -3, 0, 1, 0, 1])}, "labels holds -3"),
        ({"features": torch.full((nodes, 2), float("nan"))}, "features contains 12 NaN/inf"),
    ):
        with pytest.raises((TypeError, ValueError), match=message):
            save_partition(tmp_path / "parts", partition, weights, **changes)
        assert not (tmp_path / "parts").exists()
