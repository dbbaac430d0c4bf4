import pytest
import torch
from torch_geometric.data import Data

from pdenets.data.transforms import (
    binarize_features,
    feature_transform_for,
    largest_connected_component,
    preprocess_citation_graph,
    remove_self_loops,
    row_normalize_features,
    scale_features,
    standardize_features,
    to_undirected,
)


def _toy():
    # component {0,1,2} (with a self-loop and a duplicate), component {3,4}
    edge_index = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 2, 2, 2, 0, 4]])
    x = torch.tensor([[2.0, 0.0], [1.0, 1.0], [0.0, 3.0], [1.0, 0.0], [0.0, 0.0]])
    return Data(x=x, edge_index=edge_index, y=torch.tensor([0, 1, 0, 1, 1]), num_nodes=5)


def test_undirected_and_self_loops():
    data = remove_self_loops(to_undirected(_toy()))
    pairs = {tuple(e) for e in data.edge_index.T.tolist()}
    assert pairs == {(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (2, 0), (3, 4), (4, 3)}


def test_largest_component_relabels_and_keeps_features():
    data = largest_connected_component(to_undirected(_toy()))
    assert data.num_nodes == 3
    assert data.original_index.tolist() == [0, 1, 2]
    assert torch.equal(data.x, _toy().x[:3])
    assert int(data.edge_index.max()) == 2


def test_feature_transforms():
    data = row_normalize_features(binarize_features(_toy()))
    assert torch.allclose(data.x[:4].sum(1), torch.ones(4))
    assert torch.all(data.x[4] == 0)  # empty row stays zero
    assert set(data.x.unique().tolist()) <= {0.0, 0.5, 1.0}


def test_preprocess_composition():
    data = preprocess_citation_graph(_toy())
    assert data.num_nodes == 3
    assert not bool((data.edge_index[0] == data.edge_index[1]).any())
    adjacency = torch.zeros(3, 3)
    adjacency[data.edge_index[0], data.edge_index[1]] = 1
    assert torch.equal(adjacency, adjacency.T)


def test_largest_component_is_chosen_when_node_0_lies_in_a_smaller_one():
    # components {0, 1} and {2, 3, 4, 5}: the largest does not contain node 0
    edge_index = torch.tensor([[0, 2, 3, 4], [1, 3, 4, 5]])
    x = torch.arange(12, dtype=torch.float32).reshape(6, 2)
    data = Data(x=x, edge_index=edge_index, y=torch.tensor([0, 0, 1, 1, 0, 1]), num_nodes=6)
    kept = largest_connected_component(to_undirected(data))
    assert kept.num_nodes == 4 and kept.original_index.tolist() == [2, 3, 4, 5]
    assert torch.equal(kept.x, x[2:]) and kept.y.tolist() == [1, 1, 0, 1]
    assert {tuple(e) for e in kept.edge_index.T.tolist()} == {(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)}


def test_standardize_features_is_exact_in_float64():
    x = torch.tensor([[1.0, 5.0, 2.0], [3.0, 5.0, -1.0], [8.0, 5.0, 0.5]], dtype=torch.float64)
    out = standardize_features(Data(x=x, edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=3)).x
    expected = (x - x.mean(0)) / x.std(0, unbiased=False)
    torch.testing.assert_close(out[:, [0, 2]], expected[:, [0, 2]], rtol=0, atol=1e-15)
    assert torch.equal(out[:, 1], torch.zeros(3, dtype=torch.float64))  # a constant feature becomes 0


def test_auto_keeps_bag_of_words_for_counts_and_standardizes_real_features():
    assert feature_transform_for(torch.tensor([[0.0, 3.0], [1.0, 0.0]])) == "bag-of-words"
    # one value off a whole number, or one below zero, makes the features real-valued
    assert feature_transform_for(torch.tensor([[0.0, 3.0], [1.0, 0.5]])) == "standardize"
    assert feature_transform_for(torch.tensor([[0.0, 3.0], [-1.0, 2.0]])) == "standardize"
    assert feature_transform_for(torch.tensor([[0.5]]), "bag-of-words") == "bag-of-words"
    with pytest.raises(ValueError, match="unknown feature transform 'zscore'; choose one of auto"):
        feature_transform_for(torch.tensor([[0.5]]), "zscore")


def test_real_valued_features_keep_their_information():
    """Binarizing embeddings would make every row the same; standardized, the rows stay apart."""
    generator = torch.Generator().manual_seed(0)
    toy = _toy()
    toy.x = torch.randn(5, 4, generator=generator)
    bag = preprocess_citation_graph(toy, "bag-of-words").x
    assert torch.allclose(bag, torch.full_like(bag, 0.25))  # what the citation protocol would do to them
    kept = preprocess_citation_graph(toy, "standardize").x
    assert torch.cdist(kept, kept).fill_diagonal_(1.0).min() > 0.1
    torch.testing.assert_close(kept.mean(0), torch.zeros(4), atol=1e-6, rtol=0)
    assert torch.equal(preprocess_citation_graph(toy, "none").x, toy.x[:3])


def test_auto_keeps_sparse_real_features_sparse_at_the_density_bound():
    """TF-IDF weights (sparse, non-negative) are row-normalized, other sparse values scaled without centring:
    both keep the zeros. The bound is the models' sparse input's, inclusive: a tenth of the entries non-zero
    is sparse, one more is dense (ReLU embeddings, half zeros, are standardized)."""
    from pdenets.data.transforms import SPARSE_INPUT_DENSITY

    assert SPARSE_INPUT_DENSITY == 0.1
    tenth = torch.zeros(4, 10)
    tenth[0, 1], tenth[1, 3], tenth[2, 5], tenth[3, 7] = 0.3, 0.2, 0.7, 0.1  # 4 of 40 non-zero
    assert feature_transform_for(tenth) == "row-normalize"
    assert feature_transform_for(-tenth) == "scale"
    more = tenth.clone()
    more[0, 0] = 0.4  # 5 of 40
    assert feature_transform_for(more) == "standardize" and feature_transform_for(-more) == "standardize"


def test_boolean_and_integer_feature_tensors_are_counts():
    presence = torch.tensor([[True, False], [False, True], [True, True]])
    assert feature_transform_for(presence) == "bag-of-words"
    assert feature_transform_for(presence.long() * 3) == "bag-of-words"
    assert feature_transform_for(torch.tensor([[0, -2], [1, 3]])) == "standardize"  # signed, dense
    signed = torch.zeros(2, 10, dtype=torch.long)
    signed[0, 4] = -2
    assert feature_transform_for(signed) == "scale"  # signed, sparse
    toy = _toy()
    toy.x = torch.tensor([[True, False], [True, True], [False, True], [True, False], [False, False]])
    out = preprocess_citation_graph(toy).x
    assert out.dtype == torch.get_default_dtype()
    torch.testing.assert_close(out, torch.tensor([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]))


def test_row_normalize_and_scale_keep_every_zero_and_are_exact_in_float64():
    x = torch.tensor([[0.0, 2.0, 0.0, 6.0], [1.0, 0.0, 0.0, -3.0], [0.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    data = Data(x=x, edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=3)
    rows = row_normalize_features(data).x
    torch.testing.assert_close(rows[:2], x[:2] / x[:2].abs().sum(1, keepdim=True), rtol=0, atol=0)
    assert torch.equal(rows[2], torch.zeros(4, dtype=torch.float64))
    scaled = scale_features(data).x
    expected = x / torch.where(x.std(0, unbiased=False) > 0, x.std(0, unbiased=False), torch.ones(4))
    torch.testing.assert_close(scaled, expected, rtol=0, atol=1e-15)
    assert torch.equal(scaled == 0, x == 0)  # not centred: zeros stay zeros
    assert torch.equal(scaled[:, 2], torch.zeros(3, dtype=torch.float64))  # a constant column stays as it is


@pytest.mark.parametrize(
    "kind, transform, layout",
    [("binary", "bag-of-words", torch.sparse_csr), ("tfidf", "row-normalize", torch.sparse_csr),
     ("signed", "scale", torch.sparse_csr), ("dense", "standardize", torch.strided)],
)  # fmt: skip
def test_a_prepared_graph_keeps_sparse_features_sparse_and_holds_dense_ones_dense(
    tmp_path, kind, transform, layout
):
    """What a run gives the models: a sparse matrix where at most a tenth of the entries are non-zero, the
    dense tensor otherwise (a sparse product over dense features is the slow path)."""
    from pdenets.data import save_graph_npz
    from pdenets.data.transforms import SPARSE_INPUT_DENSITY, feature_density, prepared_graph

    generator = torch.Generator().manual_seed(1)
    nodes, width = 60, 40
    mask = torch.rand(nodes, width, generator=generator) < 0.05
    values = {
        "binary": mask.float(),
        "tfidf": mask * torch.rand(nodes, width, generator=generator),
        "signed": mask * torch.randn(nodes, width, generator=generator),
        "dense": torch.randn(nodes, width, generator=generator),
    }[kind]
    ring = torch.arange(nodes)
    edges = torch.stack([ring, (ring + 1) % nodes])
    path = save_graph_npz(Data(x=values, edge_index=edges, y=ring % 3), tmp_path / f"{kind}.npz")
    graph = prepared_graph(str(path), None)
    assert graph.feature_transform == transform and graph.x_input.layout == layout
    assert (feature_density(graph.x) <= SPARSE_INPUT_DENSITY) == (layout == torch.sparse_csr)
    assert torch.equal(graph.x_sparse.to_dense(), graph.x)
    if kind != "dense":  # the transform kept the zeros where they were
        assert torch.equal(graph.x != 0, values != 0)


def test_the_feature_kinds_benchmark_runs_and_keeps_every_sparse_kind_sparse(tmp_path):
    """``benchmarks/feature_kinds.py`` at toy size: every kind is read as a run reads it; the sparse kinds
    reach the models as sparse matrices at the pattern's density, and the old way (standardized, held sparse)
    stores every entry."""
    import json

    from ..helpers.scripts import load_script

    benchmark = load_script("benchmarks/feature_kinds.py", "feature_kinds_benchmark")
    report = tmp_path / "kinds.json"
    benchmark.main(["--nodes", "200", "--features", "150", "--density", "0.03", "--repeats", "1"])
    benchmark.main(["--nodes", "200", "--features", "150", "--repeats", "1", "--json", str(report)])
    rows = {row["kind"]: row for row in json.loads(report.read_text())}
    assert {rows[kind]["transform"] for kind in ("binary", "counts")} == {"bag-of-words"}
    assert rows["tfidf"]["transform"] == "row-normalize" and rows["dense"]["transform"] == "standardize"
    for kind in ("binary", "counts", "tfidf"):
        assert rows[kind]["input"] == "sparse" and rows[kind]["density"] < 0.05, kind
    assert rows["dense"]["input"] == "dense" and rows["binary"]["relative_to_binary"] == 1.0
    before = rows["tfidf, standardize held sparse"]
    assert before["input"] == "sparse" and before["density"] > 0.9  # centred: (almost) every entry stored
