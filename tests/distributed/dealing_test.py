"""The C++ distributed einsum deals a plan's slices as python/tropical/distributed.py does: for the same
equations, shapes and memory limits, the C++ plan (dealing_dump) and the Python plan slice the same labels into
the same number of slices, and for communicators of 1 to 4 ranks every rank gets the same slices, in the same
order, each with the same index of every sliced label as tropical.distributed._mine gives it.

Run by meson (test distributed_dealing_python): dealing_test.py DEALING_DUMP, with the source tree's python/ on
PYTHONPATH and TROPICAL_LIBRARY naming the build's library."""

import json
import subprocess
import sys
import unittest

from tropical import _einsum_path
from tropical import distributed

DUMP = None

# (equation, shapes, memory_limit): sliced plans of several slices and labels, and an unsliced one.
CASES = [
    ("ab,bc,cd,de,ea->", [(3, 3)] * 5, 1),
    ("ab,bc,cd,de,ea->", [(3, 3)] * 5, 3),
    ("ab,bc,cd,de,ea,af->f", [(4, 4)] * 5 + [(4, 2)], 2),
    ("ij,jk,kl->i", [(4, 5), (5, 6), (6, 2)], 4),
    ("ab,bc,ca,ad,bd,cd->", [(2, 2)] * 6, 2),
    ("ij,jk->ik", [(2, 3), (3, 2)], 0),
]


class FakeDist:
    """What tropical.distributed._mine asks a process group: this rank and the world size."""

    def __init__(self, rank, size):
        self.rank, self.size = rank, size

    def get_rank(self, group):
        return self.rank

    def get_world_size(self, group):
        return self.size


def shapes_text(shapes):
    return ",".join("x".join(str(d) for d in shape) for shape in shapes)


class DealingTest(unittest.TestCase):
    def test_cpp_deals_every_plan_as_the_python_module(self):
        for equation, shapes, limit in CASES:
            with self.subTest(equation=equation, memory_limit=limit):
                done = subprocess.run([DUMP, equation, shapes_text(shapes), str(limit)], capture_output=True,
                                      text=True, check=True)
                cpp = json.loads(done.stdout)
                plan = _einsum_path.cached_plan(equation, shapes, None, None, "greedy", limit or None)
                self.assertEqual(cpp["sliced"], list(plan.sliced_labels()))
                self.assertEqual(cpp["slices"], plan.info.slices)
                for size in range(1, 5):
                    for rank in range(size):
                        want = [[s, [fixed[label] for label in plan.sliced_labels()]]
                                for s, fixed in distributed._mine(FakeDist(rank, size), None, plan)]
                        self.assertEqual(cpp["ranks"][str(size)][rank], want, f"rank {rank} of {size}")
                if limit == 1:
                    self.assertGreater(cpp["slices"], 4, "a case must deal more slices than ranks")


if __name__ == "__main__":
    DUMP = sys.argv.pop(1)
    unittest.main()
