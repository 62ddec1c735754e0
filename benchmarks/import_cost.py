"""What ``import hpvm`` costs a new process, and what its first real use costs: CPU time
(``getrusage``, steadier than wall time on a loaded machine) and wall time, best of N fresh
child processes, beside NumPy's import (the floor of any real use).

    python benchmarks/import_cost.py [SRC_DIR]   # SRC_DIR: another checkout's src/ to compare

Bytecode caches are allowed (as in an installed package), whatever PYTHONDONTWRITEBYTECODE
says in this shell.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

RUNS = 9
SNIPPETS = {
    "import hpvm": "import hpvm",
    "import hpvm; hpvm.leaf; hpvm.launch": "import hpvm; hpvm.leaf; hpvm.launch",
    "import numpy": "import numpy",
}
CHILD = """
import resource, time
r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
{code}
r1 = resource.getrusage(resource.RUSAGE_SELF); t1 = time.perf_counter()
print((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), t1 - t0)
"""


def measure(src: Path) -> None:
    """Print one line per snippet: best CPU time, best and median wall time."""
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for name, code in SNIPPETS.items():
        cpu, wall = [], []
        for _ in range(RUNS):
            out = subprocess.run(
                [sys.executable, "-c", CHILD.format(code=code)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            c, w = map(float, out.stdout.split())
            cpu.append(c)
            wall.append(w)
        print(
            f"{name:38s} CPU best {min(cpu):.3f} s   wall best {min(wall):.3f} s, median {sorted(wall)[RUNS // 2]:.3f} s"
        )


if __name__ == "__main__":
    measure(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "src")
