"""collsim.simulate.jit: the engine compiled by numba and the same code as plain Python give the same times
(NCCL's tree on 2 x 8 H100: fair ports with several caps, channel rates, proxies, windows)."""
import json
import subprocess
import sys

import numpy as np

from collsim.machine import load_cluster
from collsim.predict import nccl_context, simulate_nccl
from collsim.simulate.jit import COMPILED

RUN = """import json
from collsim.machine import load_cluster
from collsim.predict import nccl_context, simulate_nccl
from collsim.simulate.jit import COMPILED
r = simulate_nccl(nccl_context(load_cluster("ib-400g", 2)), "Tree", "Simple", 1 << 22, 4).result
print(json.dumps([COMPILED, r.arrive.tolist()]))
"""


def test_compiled_and_plain_python_agree():
    here = simulate_nccl(nccl_context(load_cluster("ib-400g", 2)), "Tree", "Simple", 1 << 22, 4).result.arrive
    out = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, timeout=300,
                         env={"PATH": "/usr/bin:/bin", "COLLSIM_NO_JIT": "1"})
    compiled, plain = json.loads(out.stdout)
    assert COMPILED and not compiled                  # numba here (a core dependency), turned off there
    np.testing.assert_allclose(plain, here, rtol=1e-12)
