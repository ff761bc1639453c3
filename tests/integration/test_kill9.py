"""The kill -9 loop of kill9.py, short: the daemon SIGKILLed 25 times while
a writer makes fsync'd changes through the mount, and `slab import`,
`repack` and `resize` killed part way 9 times. Every kill must leave a
container that opens and holds every write whose fsync returned. The soak
(1000 kills) is `kill9.py --kills 1000`; see docs/reliability.md."""
import os
import random

from conftest import bin_path
import kill9


def test_kill9_loop():
    bin_dir = os.path.dirname(bin_path("slab"))
    seed = random.randrange(1 << 30)
    res = kill9.run(bin_dir, kills=25, tool_rounds=9, seed=seed)
    assert res.kills == 34, res.problems
    assert not res.problems, f"seed {seed}:\n" + "\n".join(res.problems)
    assert res.unreadable == 0 and res.lost == 0 and res.torn == 0
    assert res.ops > 100, "the writers made too few changes to test anything"
