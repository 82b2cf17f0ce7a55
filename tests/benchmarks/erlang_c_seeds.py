"""How often the simulator's Erlang C check passes for a correct model and for a wrong one.

    python tests/benchmarks/erlang_c_seeds.py [POOLS]

Runs the check of tests/infra/test_simulation.py (M/M/2 at 60% load, four runs of 5,000 arrivals
pooled) on POOLS pools of seeds other than the shipped ones (default 16), on the real model (FIFO)
and on its LIFO mutant (tests/infra/test_simulate_mutations.py), and prints, per pool, what departed
from Erlang C. A correct model should pass every pool; the LIFO queue should fail every one.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _project_python import project_python  # the scripts' folder is on sys.path

project_python(__file__)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.infra import test_simulate_mutations as mutations  # noqa: E402
from tests.infra import test_simulation as checks  # noqa: E402


def main() -> None:
    pools = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    real = checks.ClusterModel
    old, new, _ = mutations.MUTANTS["FIFO swapped for LIFO"]
    lifo = mutations.mutant(old, new).ClusterModel
    passed = {"FIFO": 0, "LIFO": 0}
    for pool in range(1, pools + 1):
        seeds = range(100 * pool, 100 * pool + len(checks.ERLANG_SEEDS))
        for name, model in (("FIFO", real), ("LIFO", lifo)):
            checks.ClusterModel = model
            waits: list[float] = []
            for seed in seeds:
                w, c, theta = checks.erlang_c_waits(2, 0.6, seed)
                waits += w
            misfits = checks.erlang_c_misfits(waits, c, theta)
            passed[name] += not misfits
            print(f"pool {pool:2d} seeds {seeds.start}-{seeds.stop - 1} {name}: {'; '.join(misfits) or 'passes'}", flush=True)
    checks.ClusterModel = real
    print(f"FIFO passed {passed['FIFO']} of {pools} pools; LIFO passed {passed['LIFO']} of {pools}")


if __name__ == "__main__":
    main()
