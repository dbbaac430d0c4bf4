"""Small graphs written in the gnn-benchmark .npz layout, for fast protocol tests."""

import numpy as np
import scipy.sparse as sp


def write_sbm_npz(
    path, *, classes=3, per_class=60, features=24, p_in=0.12, p_out=0.01, seed=0, embedded=False
):
    """A planted-partition graph whose bag-of-words features weakly indicate the class; ``embedded``: real
    features instead (standard normal plus 1.5 on the class's own coordinate, stored dense)."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(classes), per_class)
    n = labels.size
    same = labels[:, None] == labels[None, :]
    probability = np.where(same, p_in, p_out)
    upper = np.triu(rng.random((n, n)) < probability, 1)
    adjacency = sp.csr_matrix(upper.astype(np.float32))  # directed on purpose: loaders symmetrize
    arrays = dict(
        adj_data=adjacency.data,
        adj_indices=adjacency.indices,
        adj_indptr=adjacency.indptr,
        adj_shape=np.array(adjacency.shape),
        labels=labels,
    )
    if embedded:
        values = rng.normal(size=(n, features)) + 1.5 * np.eye(features)[labels]
        np.savez(path, attr_matrix=values.astype(np.float32), **arrays)
        return path
    topic = rng.random((classes, features)) < 0.25
    attributes = (rng.random((n, features)) < 0.08) | (topic[labels] & (rng.random((n, features)) < 0.3))
    attributes[:, 0] |= attributes.sum(1) == 0  # no empty rows
    attributes = sp.csr_matrix(attributes.astype(np.float32))
    np.savez(
        path,
        attr_data=attributes.data,
        attr_indices=attributes.indices,
        attr_indptr=attributes.indptr,
        attr_shape=np.array(attributes.shape),
        **arrays,
    )
    return path
