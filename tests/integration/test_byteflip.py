"""The byte-flip campaign of byteflip.py, short: 300 damaged containers read
by slab. No crash, no hang, no unclear error, no wrong data from damaged
metadata or from the checksummed dataset; every tenth copy also through a
read-only mount, whose daemon never dies; slab fsck on every copy never
crashes and finds the damage wherever a read refused the file. The long run is
`byteflip.py --files 3000`; see docs/reliability.md."""
import os
import random

from conftest import bin_path
import byteflip


def test_byteflip_campaign():
    seed = random.randrange(1 << 30)
    counts, problems = byteflip.campaign(os.path.dirname(bin_path("slab")), 300, seed, mount_every=10)
    mounted = counts.pop("mounted")
    fsck = counts.pop("fsck")
    assert sum(fsck.values()) == 300 and fsck["crash"] == 0 and fsck["hang"] == 0, fsck
    assert fsck["damaged"] >= counts["error"], (fsck, counts)  # it finds what reads refuse
    assert sum(counts.values()) == 300
    assert sum(mounted.values()) == 30 and mounted["crash"] == 0 and mounted["hang"] == 0, mounted
    assert counts["error"] > 0 and counts["same"] > 0, counts  # the damage did land, in both ways
    assert not problems, f"seed {seed}: {counts}\n" + "\n".join(problems)
    assert counts["crash"] == 0 and counts["hang"] == 0
