"""Ground state of a +-J spin glass as one max-plus tensor network, with tropical.einsum.

An L x W lattice of spins s = +-1 with random couplings J = +-1 on its bonds has energy
H(s) = -sum_<ij> J_ij s_i s_j. Every spin is a label (index 0: s = -1, 1: s = +1), every bond a 2 x 2 tensor
J_ij s_i s_j, every spin a zero-field vector [0, 0]: the max-plus contraction of the lattice is max_s -H(s), so
the ground-state energy is E0 = -einsum(...). tropical.einsum_argmax traces a ground state back through the
contraction. Where torch (>= 2.4) is present, the ground state is also recovered from the gradient of
tropical.torch.einsum with respect to the fields (1 on the optimal state of each spin, 0 on the other: max-plus
routes the gradient through the argmax), on the GPU when there is one. Both are checked against brute force.

Usage: python3 spin_glass.py [L W seed]"""

import itertools
import sys

import numpy as np

import tropical


def lattice(length, width, seed):
    """Random +-1 couplings: horizontal[c][r] joins (c, r)-(c+1, r), vertical[c][r] joins (c, r)-(c, r+1)."""
    rng = np.random.default_rng(seed)
    horizontal = rng.integers(0, 2, (length - 1, width)) * 2 - 1
    vertical = rng.integers(0, 2, (length, width - 1)) * 2 - 1
    return horizontal.astype(np.float64), vertical.astype(np.float64)


def network(horizontal, vertical):
    """The interleaved einsum arguments (tensor, [labels], ..., []) of max_s -H(s); spin (c, r) is label c W + r.
    The first `length * width` tensors are the zero fields, one per spin."""
    length, width = vertical.shape[0], horizontal.shape[1]
    spin = np.array([-1.0, 1.0])
    pair = np.outer(spin, spin)  # s_i s_j for the four states of a bond
    args = []
    for label in range(length * width):
        args += [np.zeros(2), [label]]
    for c in range(length):
        for r in range(width):
            if c + 1 < length:
                args += [horizontal[c, r] * pair, [c * width + r, (c + 1) * width + r]]
            if r + 1 < width:
                args += [vertical[c, r] * pair, [c * width + r, c * width + r + 1]]
    return args + [[]]


def energy(spins, horizontal, vertical):
    """H(s) for spins of shape (L, W)."""
    return -((horizontal * spins[:-1] * spins[1:]).sum() + (vertical * spins[:, :-1] * spins[:, 1:]).sum())


def ground_state(horizontal, vertical):
    """(E0, one ground-state configuration) by max-plus contraction and its argmax traceback."""
    length, width = vertical.shape[0], horizontal.shape[1]
    value, assignment = tropical.einsum_argmax(*network(horizontal, vertical))
    spins = np.array([[2 * assignment[c * width + r] - 1 for r in range(width)] for c in range(length)], np.float64)
    return -float(value), spins


def ground_state_from_the_gradient(horizontal, vertical):
    """(E0, one ground state) from tropical.torch.einsum's gradient, or None without torch >= 2.4."""
    try:
        import torch
        import tropical.torch as tt
    except ImportError:
        return None
    device = "cuda" if torch.cuda.is_available() and tropical.device_count() > 0 else "cpu"
    length, width = vertical.shape[0], horizontal.shape[1]
    args = network(horizontal, vertical)
    fields = [torch.zeros(2, dtype=torch.float64, device=device, requires_grad=True) for _ in range(length * width)]
    tensors = [fields[i // 2] if i // 2 < len(fields) else torch.tensor(args[i], device=device)
               for i in range(0, len(args) - 1, 2)]
    interleaved = [x for t, labels in zip(tensors, args[1::2]) for x in (t, labels)] + [[]]
    best = tt.einsum(*interleaved)
    best.backward()
    chosen = [int(f.grad.argmax()) for f in fields]
    spins = np.array(chosen, np.float64).reshape(length, width) * 2 - 1
    return -best.item(), spins, device


def brute_force(horizontal, vertical):
    """min_s H(s) over all 2^(L W) configurations at once."""
    length, width = vertical.shape[0], horizontal.shape[1]
    c = np.array(list(itertools.product((-1.0, 1.0), repeat=length * width))).reshape(-1, length, width)
    h = (horizontal * c[:, :-1] * c[:, 1:]).sum((1, 2)) + (vertical * c[:, :, :-1] * c[:, :, 1:]).sum((1, 2))
    return float((-h).min())


def show(spins):
    return "\n".join(" ".join("+" if s > 0 else "-" for s in row) for row in spins.T.tolist())


def main(argv):
    length, width, seed = (int(x) for x in argv[1:4]) if len(argv) > 3 else (4, 4, 1)
    horizontal, vertical = lattice(length, width, seed)
    e0, spins = ground_state(horizontal, vertical)
    print(f"{length} x {width} +-J spin glass: ground-state energy {e0:g}")
    print("a ground state traced back through the contraction:\n" + show(spins))
    e_config = float(energy(spins, horizontal, vertical))
    e_brute = brute_force(horizontal, vertical)
    print(f"its energy {e_config:g}; brute force over {2 ** (length * width)} configurations: {e_brute:g}")
    ok = e0 == e_config == e_brute
    found = ground_state_from_the_gradient(horizontal, vertical)
    if found is not None:
        e_grad, grad_spins, device = found
        e_grad_config = float(energy(grad_spins, horizontal, vertical))
        print(f"from the gradient of tropical.torch.einsum on {device}: energy {e_grad:g}, its configuration's "
              f"{e_grad_config:g}")
        ok = ok and e_grad == e_grad_config == e_brute
    if not ok:
        print("MISMATCH")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
