"""A partitioned graph in one process: loss shares, counts, rows and ids by hand; whole-graph training."""

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from pdenets.data.splits import Split
from pdenets.models import DiffResNet
from pdenets.models.node_training import fit_node_classifier
from pdenets.models.partitioned import (
    agreed_partition,
    fit_partitioned_node_classifier,
    global_count,
    local_nodes,
    partitioned_accuracy,
    partitioned_cross_entropy,
    partitioned_diff_resnet,
    rows_of_part,
)
from pdenets.operators import GraphPartition, PartFile, save_partition


def _graph(nodes=10, seed=0):
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((nodes, nodes)) < 0.4, 1) * rng.uniform(0.1, 0.3, (nodes, nodes))
    dense = torch.from_numpy(upper + upper.T)
    features = torch.from_numpy(rng.normal(size=(nodes, 3)))
    labels = torch.from_numpy(rng.integers(0, 3, nodes))
    return dense, features, labels


def test_shares_of_the_loss_add_up_to_the_mean_loss_and_its_gradient():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(9, 4, generator=generator, dtype=torch.float64, requires_grad=True)
    labels = torch.randint(0, 4, (9,), generator=generator)
    labelled = torch.tensor([0, 2, 3, 7, 8])
    whole = F.cross_entropy(logits[labelled], labels[labelled])
    (expected_gradient,) = torch.autograd.grad(whole, logits)
    # two processes' shares: rows 0 … 4 and 5 … 8, each divided by the global count |T| = 5
    first = partitioned_cross_entropy(logits[:5], labels[:5], torch.tensor([0, 2, 3]), 5)
    second = partitioned_cross_entropy(logits[5:], labels[5:], torch.tensor([2, 3]), 5)
    torch.testing.assert_close(first + second, whole, rtol=1e-14, atol=0)
    (gradient,) = torch.autograd.grad(first + second, logits)
    torch.testing.assert_close(gradient, expected_gradient, rtol=1e-14, atol=1e-16)
    # a process without labelled rows contributes zero, still connected to its logits
    empty = partitioned_cross_entropy(logits[5:], labels[5:], torch.tensor([], dtype=torch.long), 5)
    assert float(empty.detach()) == 0.0 and empty.requires_grad
    assert torch.equal(torch.autograd.grad(empty, logits)[0], torch.zeros_like(logits))
    with pytest.raises(ValueError, match="no labelled nodes on any process"):
        partitioned_cross_entropy(logits, labels, labelled, 0)
    assert global_count(7) == 7


def test_accuracy_counts_the_given_rows_and_an_empty_set_scores_zero():
    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0], [0.0, 1.0], [5.0, 0.0]])
    labels = torch.tensor([0, 1, 1, 1, 1])
    assert partitioned_accuracy(logits, labels, torch.tensor([0, 1, 2])) == pytest.approx(2 / 3)
    assert partitioned_accuracy(logits, labels, torch.tensor([2, 4])) == 0.0
    assert partitioned_accuracy(logits, labels, torch.tensor([], dtype=torch.long)) == 0.0


def test_a_parts_rows_are_the_renumbered_rows_and_local_ids_follow_the_new_numbering():
    dense, _, _ = _graph(nodes=6)
    order = torch.tensor([4, 1, 5, 0, 3, 2])  # new id → old id
    partition = GraphPartition(order, torch.tensor([0, 2, 6]), "contiguous", 0.0)
    renumbered = dense[order][:, order]
    for part, (first, end) in enumerate([(0, 2), (2, 6)]):
        rows = rows_of_part(dense.to_sparse(), partition, part)
        assert rows.layout == torch.sparse_csr and rows.shape == (end - first, 6)
        torch.testing.assert_close(rows.to_dense(), renumbered[first:end], rtol=0, atol=0)
    # old 5, 4, 3, 1 are new 2, 0, 4, 1: part 0 holds new 0, 1 (local 0, 1); part 1: new 2, 4 (local 0, 2)
    nodes = torch.tensor([5, 4, 3, 1])
    assert local_nodes(nodes, partition, 0).tolist() == [0, 1]
    assert local_nodes(nodes, partition, 1).tolist() == [0, 2]


def test_one_process_agrees_on_a_single_part_and_checks_a_saved_partition(tmp_path):
    dense, features, labels = _graph(nodes=8)
    alone = agreed_partition(dense, "contiguous")
    assert (
        alone.num_parts == 1 and alone.order.tolist() == list(range(8)) and alone.offsets.tolist() == [0, 8]
    )
    two = GraphPartition(torch.arange(8), torch.tensor([0, 3, 8]), "contiguous", 0.0)
    folder = save_partition(tmp_path / "two", two, dense)
    with pytest.raises(
        ValueError, match=r"has 2 parts of a 8-node graph; this run has 1 processes and a 8-node"
    ):
        agreed_partition(dense, str(folder))
    one = save_partition(tmp_path / "one", agreed_partition(dense, "contiguous"), dense)
    assert agreed_partition(dense, str(one)).offsets.tolist() == [0, 8]
    with pytest.raises(ValueError, match="a 9-node graph"):
        agreed_partition(torch.zeros(9, 9, dtype=torch.float64), str(one))


def _whole_part(dense, features):
    return PartFile(0, 1, dense.shape[0], 0, dense.to_sparse_csr(), torch.arange(dense.shape[0]), features)


def test_the_partitioned_model_of_the_whole_graph_is_the_diff_resnet_on_it():
    dense, features, _ = _graph(nodes=10)
    torch.manual_seed(3)
    partitioned = partitioned_diff_resnet(
        _whole_part(dense, features), 3, step_size=0.3, num_steps=2
    ).double()
    torch.manual_seed(3)
    reference = DiffResNet(3, 3, num_steps=2, step_size=0.3, weights=dense).double()
    torch.testing.assert_close(partitioned(features), reference(features), rtol=1e-12, atol=1e-14)
    # by hand: x + FC2 ReLU FC1 x, two steps of I − γ(Λ − W), then the classifier
    block = reference.blocks[0]
    step = torch.eye(10, dtype=torch.float64) - 0.3 * (torch.diag(dense.sum(1)) - dense)
    hidden = features + block.fc2(torch.relu(block.fc1(features)))
    torch.testing.assert_close(partitioned(features), reference.classifier(step @ step @ hidden))
    with pytest.raises(ValueError, match="no features saved: give in_features"):
        partitioned_diff_resnet(_whole_part(dense, None), 3, step_size=0.3, num_steps=2)
    assert partitioned_diff_resnet(_whole_part(dense, None), 3, step_size=0.3, num_steps=2, in_features=3)


def test_training_on_one_part_is_training_on_the_whole_graph():
    dense, features, labels = _graph(nodes=12, seed=1)
    torch.manual_seed(0)
    model = partitioned_diff_resnet(_whole_part(dense, features), 3, step_size=0.3, num_steps=2).double()
    torch.manual_seed(0)
    twin = DiffResNet(3, 3, num_steps=2, step_size=0.3, weights=dense).double()
    train, val, test = torch.arange(0, 5), torch.arange(5, 8), torch.arange(8, 12)
    options = {"lr": 0.05, "weight_decay": 1e-3, "max_epochs": 5, "patience": 2}
    result, record = fit_partitioned_node_classifier(model, features, labels, train, val, test, **options)
    expected_result, expected = fit_node_classifier(
        twin, (features,), labels, Split(train, val, test), **options
    )
    assert (result.epochs, result.best_epoch) == (expected_result.epochs, expected_result.best_epoch)
    assert record.keys() == expected.keys()
    assert record["diverged_at_epoch"] is expected["diverged_at_epoch"] is None
    for key, value in expected.items():
        if value is not None:
            assert record[key] == pytest.approx(value, rel=1e-10, abs=1e-14), key
    for name, value in twin.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name], value, rtol=1e-10, atol=1e-14)
