"""collsim.simulate.jit: the engine compiled by numba and the same code as plain Python give the same times
(NCCL's tree on 2 x 8 H100: fair ports with several caps, channel rates, proxies, windows); small runs stay in
plain Python and never import numba."""
import json
import subprocess
import sys

import numpy as np

from collsim.machine import load_cluster
from collsim.predict import nccl_context, simulate_nccl
from collsim.simulate import jit
from collsim.simulate.events import _fair

RUN = """import json, sys
from collsim.machine import load_cluster
from collsim.predict import nccl_context, simulate_nccl
from collsim.simulate.jit import COMPILED
r = simulate_nccl(nccl_context(load_cluster("ib-400g", 2)), "Tree", "Simple", 1 << 22, 4).result
print(json.dumps([COMPILED, "numba" in sys.modules, r.arrive.tolist()]))
"""


def _tree():
    return simulate_nccl(nccl_context(load_cluster("ib-400g", 2)), "Tree", "Simple", 1 << 22, 4).result.arrive


def test_compiled_and_plain_python_agree(monkeypatch):
    monkeypatch.setattr(jit, "COMPILE_FROM", 0)               # every kernel compiled, however small the run
    assert jit.pick(_fair, 1) is jit.compiled(_fair) is not _fair
    here = _tree()
    for env in ({"COLLSIM_NO_JIT": "1"}, {}):                 # numba off; on, but the run below COMPILE_FROM
        out = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, timeout=300,
                             env={"PATH": "/usr/bin:/bin", **env})
        compiled, imported, plain = json.loads(out.stdout)
        assert compiled == (not env) and not imported        # plain Python, numba never loaded
        np.testing.assert_allclose(plain, here, rtol=1e-12)
