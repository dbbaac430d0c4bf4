"""Graph folders a user would write: edge lists with a features file and a labels file."""

import numpy as np


def write_graph_with_features(folder, nodes, seed, stem="g"):
    """Three communities with 4 features each node (its community, blurred); every label known."""
    rng = np.random.default_rng(seed)
    community = [i * 3 // nodes for i in range(nodes)]
    lines = []
    for i in range(nodes):
        for _ in range(4):
            same = [j for j in range(nodes) if community[j] == community[i]]
            j = int(rng.choice(same)) if rng.random() < 0.9 else int(rng.integers(nodes))
            if i != j:
                lines.append(f"v{i} v{j}")
    (folder / f"{stem}.txt").write_text("\n".join(lines) + "\n")
    features = [
        f"v{i} "
        + " ".join(f"{value:.4f}" for value in np.eye(4)[community[i]] + rng.normal(scale=0.6, size=4))
        for i in range(nodes)
    ]
    (folder / f"{stem}-features.txt").write_text("\n".join(features) + "\n")
    (folder / f"{stem}-labels.txt").write_text("".join(f"v{i} {'rgb'[community[i]]}\n" for i in range(nodes)))
    return folder / f"{stem}.txt"
