"""Ground state of a +-J spin glass by max-plus contraction in PyTorch, with tropical.torch.

An L x W lattice of spins s = +-1 with random couplings J = +-1 on its bonds has energy
H(s) = -sum_<ij> J_ij s_i s_j. Its ground-state energy is E0 = -max_s (-H(s)): a max-plus contraction of
the lattice's transfer matrices, column by column (2^W states per column). The gradient of E0 with respect
to each column's state weights is -1 on one optimal state and 0 elsewhere (max-plus routes it through the
argmax), so backward() recovers a ground-state configuration. Both are checked against brute force.

Runs on the GPU when there is one (and tropical sees it), else on the CPU path.
Usage: python3 spin_glass.py [L W seed]"""

import itertools
import sys

import torch

import tropical
import tropical.torch as tt


def lattice(length, width, seed):
    """Random +-1 couplings: horizontal[c][r] joins (c, r)-(c+1, r), vertical[c][r] joins (c, r)-(c, r+1)."""
    g = torch.Generator().manual_seed(seed)
    horizontal = torch.randint(0, 2, (length - 1, width), generator=g) * 2 - 1
    vertical = torch.randint(0, 2, (length, width - 1), generator=g) * 2 - 1
    return horizontal.double(), vertical.double()


def column_states(width):
    """Every column configuration as a (2^W, W) tensor of +-1."""
    return torch.tensor(list(itertools.product((-1.0, 1.0), repeat=width)), dtype=torch.float64)


def energy(spins, horizontal, vertical):
    """H(s) for spins of shape (L, W)."""
    return -((horizontal * spins[:-1] * spins[1:]).sum() + (vertical * spins[:, :-1] * spins[:, 1:]).sum())


def ground_state(horizontal, vertical, device):
    """(E0, one ground-state configuration) by max-plus contraction and its gradient."""
    length, width = vertical.shape[0], horizontal.shape[1]
    states = column_states(width)
    # Column weights -H inside each column (leaves of the gradient), and transfer matrices between columns.
    inside = torch.stack([(vertical[c] * states[:, :-1] * states[:, 1:]).sum(1) for c in range(length)])
    inside = inside.to(device).requires_grad_()
    transfer = [(states @ torch.diag(horizontal[c]) @ states.T).to(device) for c in range(length - 1)]
    v = inside[0].unsqueeze(0)  # 1 x 2^W: best -H of the columns so far, by the last column's state
    for c in range(length - 1):
        v = tt.maxplus_matmul(v, transfer[c]) + inside[c + 1].unsqueeze(0)
    best = tt.maxplus_matmul(v, torch.zeros(v.shape[1], 1, dtype=v.dtype, device=device))  # max over the last column
    e0 = -best[0, 0]
    e0.backward()
    chosen = (inside.grad != 0).double().argmax(1).cpu()
    return e0.item(), states[chosen]


def brute_force(horizontal, vertical):
    """min_s H(s) over all 2^(L W) configurations at once."""
    length, width = vertical.shape[0], horizontal.shape[1]
    c = column_states(length * width).reshape(-1, length, width)
    h = (horizontal * c[:, :-1] * c[:, 1:]).sum((1, 2)) + (vertical * c[:, :, :-1] * c[:, :, 1:]).sum((1, 2))
    return (-h).min().item()


def main(argv):
    length, width, seed = (int(x) for x in argv[1:4]) if len(argv) > 3 else (4, 4, 1)
    device = "cuda" if torch.cuda.is_available() and tropical.device_count() > 0 else "cpu"
    horizontal, vertical = lattice(length, width, seed)
    e0, spins = ground_state(horizontal, vertical, device)
    print(f"{length} x {width} +-J spin glass on {device}: ground-state energy {e0:g}")
    print("a ground state recovered from the gradient:\n" + "\n".join(
        " ".join("+" if s > 0 else "-" for s in row) for row in spins.T.tolist()))
    e_config = energy(spins, horizontal, vertical).item()
    e_brute = brute_force(horizontal, vertical)
    print(f"its energy {e_config:g}; brute force over {2 ** (length * width)} configurations: {e_brute:g}")
    if not (e0 == e_config == e_brute):
        print("MISMATCH")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
