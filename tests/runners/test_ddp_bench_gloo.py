"""runners/ddp_bench.py under torchrun on 2 CPU processes (gloo), compared with collsim.strategies.overlap.

Checks the records, that collsim's DDP buckets are exactly the ones DDP reported, and that
the iteration time collsim.strategies.overlap predicts from the run's own measured per-layer compute,
forward, optimizer step, casts and AllReduce times is within a factor BOUND of the measured
one. The prediction error is printed (pytest -s).

Why the bound is a factor, not a few percent: this runs on a shared 2-core CI machine, with
two processes of one compute thread each plus gloo's threads, while other jobs run. The
parts are measured one after another, seconds apart, under load that changes between them.
Three runs of this exact configuration at load average ~3 (2026-11-30, 2-core VM, torch
2.13.0+cpu) gave prediction errors from -59% to +61% with medians and from -59% to -2% with
minima (minimum over calls: interference only adds time). And on CPU the "comm stream" is
threads competing for the same two cores as the compute, so overlap is partly lost and the
measurement sits between the overlap prediction and the one-stream sum. BOUND = 2.5 covers
that spread; a gross modelling error (a missing phase, wrong buckets, a unit slip) does not
fit inside it. The real validation is on GPUs: data/h200x2/STRATEGIES.md (2 x H200).
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from collsim.strategies.ddp import load, predict  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BOUND = 2.5


@pytest.fixture(scope="module")
def ddp_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp") / "ddp_gloo.jsonl"
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or shutil.which("torchrun")
    if torchrun is None:
        pytest.skip("torchrun not found")
    cmd = [torchrun, "--standalone", "--nproc-per-node", "2", "runners/ddp_bench.py", "--backend", "gloo",
           "--layers", "4", "--width", "512", "--batch", "128", "--caps", "1,8", "--hooks", "none,fp16,bf16",
           "--iters", "15", "--ar-iters", "30", "--out", str(out)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.slow
def test_records_are_complete(ddp_file):
    recs = [json.loads(line) for line in ddp_file.read_text().splitlines()]
    meta = recs[0]
    assert meta["type"] == "meta" and meta["backend"] == "gloo" and meta["world_size"] == 2
    assert meta["forced_env"]["NCCL_NVLS_ENABLE"] == "0" and meta["env_problems"] == []
    assert "DDP allows bf16_compress_hook with NCCL only" in meta["skipped_hooks"]["bf16"]
    kinds = [r["type"] for r in recs]
    assert kinds.count("layer") == 4 and kinds.count("ddp") == 4   # 2 caps x (none, fp16)
    results = [r for r in recs if r["type"] == "result"]
    assert all(r["wrong"] == 0 and r["time_us"] > 0 and r["ranks"] == 2 for r in results)
    assert {r["dtype"] for r in results} == {"float32", "float16"}
    layer = next(r for r in recs if r["type"] == "layer")
    assert layer["param_bytes"] == [512 * 512 * 4, 512 * 4]


@pytest.mark.slow
def test_prediction_against_measurement(ddp_file):
    for stat in ("median", "min"):
        rows = predict(load(ddp_file, stat))
        for r in rows:
            print(f"{stat:6s} cap {r['bucket_cap_mb']:>4} MB hook {r['hook']:4s}: measured "
                  f"{r['measured_s'] * 1e3:6.2f} ms, predicted {r['predicted_s'] * 1e3:6.2f} ms "
                  f"({r['error']:+.0%}), one stream {r['one_stream_s'] * 1e3:6.2f} ms")
            assert r["buckets_match"], (r["buckets"], "DDP's buckets differ from collsim's")
            assert 1 / BOUND <= r["predicted_s"] / r["measured_s"] <= BOUND
    # 1 MB buckets split the 4 x 1 MiB gradients into four; 8 MB makes one bucket.
    assert [len(r["buckets"]) for r in rows] == [4, 4, 1, 1]
