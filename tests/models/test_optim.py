"""pdenets' Adam is torch.optim.Adam's arithmetic, bit for bit: several groups (one without weight decay),
a parameter that misses gradients on some steps, float32 and float64, many steps; and it refuses bad
settings."""

import pytest
import torch

from pdenets.models.optim import Adam


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_steps_are_torchs_bit_for_bit(dtype):
    torch.manual_seed(0)
    ours = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3)).to(dtype)
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3)).to(dtype)
    theirs.load_state_dict(ours.state_dict())

    def groups(model):
        return [
            {"params": list(model[0].parameters()), "weight_decay": 0.01},
            {"params": list(model[2].parameters()), "weight_decay": 0.0, "lr": 0.03},
        ]

    mine, reference = Adam(groups(ours), lr=0.01), torch.optim.Adam(groups(theirs), lr=0.01)
    x = torch.randn(16, 5, dtype=dtype)
    for step in range(40):
        for model, optimizer in ((ours, mine), (theirs, reference)):
            optimizer.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            if step % 7 == 3:  # a step without the first layer's bias gradient
                model[0].bias.grad = None
            optimizer.step()
    for a, b in zip(ours.parameters(), theirs.parameters()):
        assert torch.equal(a, b)


def test_bad_settings_are_refused():
    parameter = torch.nn.Parameter(torch.zeros(2))
    for settings in ({"lr": -1.0}, {"eps": -1e-8}, {"weight_decay": -0.1}, {"betas": (0.9, 1.0)}):
        with pytest.raises(ValueError):
            Adam([parameter], **settings)
