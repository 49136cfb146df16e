"""The NCCL environment variables the lecture names: what each selects, and a validator.

``VARIABLES`` maps each name to an ``NcclVar`` (what it selects, its default,
the values NCCL accepts). ``LECTURE_ERRORS`` says what the lecture gets wrong
about them, ``FRAMEWORKS`` how the same variables reach TensorFlow and MXNet.
``check_env(env)`` returns a list of one-line problems (empty when fine) for a
dict such as ``os.environ``; the runners record it in their metadata.

Facts are from NCCL's env.rst and source (src/transport/net_socket.cc:
``MAX_THREADS 16``, ``MAX_SOCKETS 64``, both socket parameters default -2 =
auto, which gives 0 helper threads x 1 socket except on AWS (2 x 8) and GCP
gVNIC (4 x 1)). Values change between NCCL versions; the NCCL you run prints
what it read with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV.
"""
from __future__ import annotations

from dataclasses import dataclass

from collsim.inputs import MAX_CHANNELS


@dataclass(frozen=True)
class NcclVar:
    name: str
    selects: str
    default: str
    values: str


ALGORITHMS = ("ring", "tree", "nvls", "nvlstree", "collnetdirect", "collnetchain", "pat")
PROTOCOLS = ("ll", "ll128", "simple")
DEBUG_LEVELS = ("version", "warn", "info", "abort", "trace")
SUBSYSTEMS = ("init", "coll", "p2p", "shm", "net", "graph", "tuning", "env", "alloc", "call",
              "proxy", "nvls", "bootstrap", "reg", "profile", "ras", "all")
MAX_SOCKET_THREADS, MAX_SOCKETS = 16, 64

VARIABLES = {v.name: v for v in [
    NcclVar("NCCL_ALGO",
            "which algorithms NCCL may choose from (its cost model picks among them per call)",
            "all that the topology supports",
            "comma list of Ring, Tree, NVLS, NVLSTree, CollNetDirect, CollNetChain, PAT "
            "(case-insensitive); a leading ^ excludes; unknown names are an error from 2.24"),
    NcclVar("NCCL_PROTO",
            "which protocols NCCL may use: LL (low latency, half bandwidth), LL128, Simple",
            "LL, LL128 where the path supports it, Simple",
            "comma list of LL, LL128, Simple; ^ excludes"),
    NcclVar("NCCL_BUFFSIZE",
            "bytes of each connection's Simple buffer (8 slots): the pipeline granularity",
            "4194304 (4 MiB)", "positive integer, bytes (powers of two recommended)"),
    NcclVar("NCCL_MIN_NCHANNELS", "lower bound on channels (one thread block each) per collective",
            "chosen by the topology search", f"integer 1..{MAX_CHANNELS}"),
    NcclVar("NCCL_MAX_NCHANNELS",
            "upper bound on channels per collective (applied after NCCL doubles the search's "
            "channels; NCCL's time model ignores it)", "chosen by the topology search",
            f"integer 1..{MAX_CHANNELS}"),
    NcclVar("NCCL_SOCKET_NTHREADS", "CPU helper threads per connection of the socket transport",
            "auto: 0 (2 on AWS, 4 on GCP gVNIC)", f"integer 0..{MAX_SOCKET_THREADS}; "
            f"threads x sockets per thread <= {MAX_SOCKETS}"),
    NcclVar("NCCL_NSOCKS_PERTHREAD", "sockets each helper thread opens (socket transport)",
            "auto: 1 (8 on AWS)",
            f"integer 1..{MAX_SOCKETS}; threads x sockets per thread <= {MAX_SOCKETS}"),
    NcclVar("NCCL_SOCKET_IFNAME",
            "the IP interfaces for bootstrap and socket-transport traffic (not the IB "
            "device)", "any interface except lo and docker*, ib* preferred",
            "comma list of name prefixes; ^ excludes; = matches a name exactly (=eth0)"),
    NcclVar("NCCL_IB_DISABLE",
            "1 turns the InfiniBand/RoCE verbs transport off, so sockets carry inter-node "
            "traffic", "0 (IB used when present)", "0 or 1"),
    NcclVar("NCCL_IB_HCA", "which IB devices (and ports) NCCL uses", "all active devices",
            "comma list of device[:port] prefixes, e.g. mlx5_0:1; ^ excludes; = exact"),
    NcclVar("NCCL_P2P_DISABLE",
            "1 turns the GPU peer-to-peer transport (NVLink or PCIe) off; traffic goes through "
            "host shared memory (SHM) or the network", "0", "0 or 1"),
    NcclVar("NCCL_SHM_DISABLE",
            "1 turns the host shared-memory transport off (then the network is used between GPUs "
            "that cannot do P2P)", "0", "0 or 1"),
    NcclVar("NCCL_DEBUG", "how much NCCL logs", "unset: errors only",
            "VERSION, WARN, INFO, ABORT, TRACE (TRACE needs a debug build)"),
    NcclVar("NCCL_DEBUG_SUBSYS",
            "which subsystems INFO logs cover (TUNING shows the cost-model table, COLL each call's "
            "choice)", "INIT,BOOTSTRAP,ENV", "comma list of " + ", ".join(
                s.upper() for s in SUBSYSTEMS) + "; ^ excludes"),
    NcclVar("NCCL_NVLS_ENABLE",
            "NVLink SHARP (multicast reductions in the NVSwitch); needs more than 2 GPUs on an "
            "NVSwitch system", "on where supported",
            "0 or 1 (some versions also accept 2 = auto)"),
]}

LECTURE_ERRORS = [
    "NCCL_NSOCKS is not an NCCL variable: the socket transport's knobs are NCCL_SOCKET_NTHREADS "
    "and NCCL_NSOCKS_PERTHREAD, and their product is capped at 64.",
    "NCCL_IB_DISABLE=0 is already the default: setting it 'to prefer IB' changes nothing.",
    "NCCL_SOCKET_IFNAME chooses the IP interface for bootstrap and socket traffic; the IB device "
    "is NCCL_IB_HCA.",
    "NCCL_BUFFSIZE (example 8 MiB) only changes the Simple protocol's pipeline slots: it helps "
    "large messages on slow links at most, and costs memory per connection.",
]

FRAMEWORKS = """\
All three frameworks call the same libnccl, which reads NCCL_* from the process environment when it
creates its first communicator. So set them before the framework starts NCCL: in the shell or the
job script (exported on every node: torchrun/mpirun/srun pass the environment to the processes they
start), or in /etc/nccl.conf, or in Python via os.environ before the first collective. Only PyTorch
is used in collsim's code; for the others, in words:
- PyTorch: torch.distributed.init_process_group("nccl") creates communicators lazily at the first
  collective (or eagerly with device_id=...); variables set after that have no effect.
- TensorFlow: tf.distribute.MirroredStrategy (one machine, NCCL all-reduce by default through
  tf.distribute.NcclAllReduce) and MultiWorkerMirroredStrategy (communication option
  CommunicationImplementation.NCCL) reach the same libnccl; TF_CONFIG describes the workers, the
  NCCL_* variables still come from the environment.
- MXNet: kvstore type "nccl" (mx.kv.create("nccl")) reduces over NCCL inside one machine; the same
  NCCL_* variables apply. Across machines MXNet uses its parameter server (dist_sync) or Horovod.
"""


def _split(value: str) -> tuple[bool, list[str]]:
    v = value.strip()
    negate = v.startswith("^")
    return negate, [t.strip() for t in v.lstrip("^").split(",")]


def _check_names(name: str, value: str, allowed: tuple[str, ...]) -> list[str]:
    # NCCL_ALGO/NCCL_PROTO also take per-collective lists (2.24+):
    # "allreduce:tree,ring;broadcast:ring".
    problems = []
    for part in value.split(";"):
        lst = part.split(":", 1)[1] if ":" in part else part
        _, tokens = _split(lst)
        bad = [t for t in tokens if t.lower() not in allowed]
        if bad:
            problems.append(f"{name}={value!r}: unknown {'/'.join(bad)} (allowed: "
                            f"{', '.join(allowed)})")
    return problems


def _int(name: str, value: str, lo: int, hi: int | None) -> tuple[int | None, list[str]]:
    try:
        n = int(value, 0)
    except ValueError:
        return None, [f"{name}={value!r}: not an integer"]
    if n < lo or (hi is not None and n > hi):
        return None, [f"{name}={n}: out of range {lo}..{hi if hi is not None else 'inf'}"]
    return n, []


def check_env(env: dict) -> list[str]:
    """Problems with the NCCL variables in ``env`` (a mapping of name -> string), one line each."""
    problems: list[str] = []
    get = {k: str(v) for k, v in env.items() if k.startswith("NCCL_")}
    if "NCCL_NSOCKS" in get:
        problems.append("NCCL_NSOCKS is not an NCCL variable (ignored by NCCL): use "
                        "NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD")
    if "NCCL_ALGO" in get:
        problems += _check_names("NCCL_ALGO", get["NCCL_ALGO"], ALGORITHMS)
    if "NCCL_PROTO" in get:
        problems += _check_names("NCCL_PROTO", get["NCCL_PROTO"], PROTOCOLS)
    if "NCCL_DEBUG" in get and get["NCCL_DEBUG"].lower() not in DEBUG_LEVELS:
        problems.append(f"NCCL_DEBUG={get['NCCL_DEBUG']!r}: expected one of "
                        f"{', '.join(DEBUG_LEVELS).upper()}")
    if "NCCL_DEBUG_SUBSYS" in get:
        problems += _check_names("NCCL_DEBUG_SUBSYS", get["NCCL_DEBUG_SUBSYS"].replace(";", ","),
                                 SUBSYSTEMS)
    for flag in ("NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE"):
        if flag in get and get[flag].strip() not in ("0", "1"):
            problems.append(f"{flag}={get[flag]!r}: expected 0 or 1")
    if "NCCL_NVLS_ENABLE" in get and get["NCCL_NVLS_ENABLE"].strip() not in ("0", "1", "2"):
        problems.append(f"NCCL_NVLS_ENABLE={get['NCCL_NVLS_ENABLE']!r}: expected 0 or 1")
    if "NCCL_BUFFSIZE" in get:
        problems += _int("NCCL_BUFFSIZE", get["NCCL_BUFFSIZE"], 1, None)[1]
    chans = {}
    for name in ("NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"):
        if name in get:
            chans[name], p = _int(name, get[name], 1, MAX_CHANNELS)
            problems += p
    lo, hi = chans.get("NCCL_MIN_NCHANNELS"), chans.get("NCCL_MAX_NCHANNELS")
    if lo is not None and hi is not None and lo > hi:
        problems.append(f"NCCL_MIN_NCHANNELS={lo} > NCCL_MAX_NCHANNELS={hi}")
    threads = socks = None
    if "NCCL_SOCKET_NTHREADS" in get:
        threads, p = _int("NCCL_SOCKET_NTHREADS", get["NCCL_SOCKET_NTHREADS"], 0,
                          MAX_SOCKET_THREADS)
        problems += p
    if "NCCL_NSOCKS_PERTHREAD" in get:
        socks, p = _int("NCCL_NSOCKS_PERTHREAD", get["NCCL_NSOCKS_PERTHREAD"], 1, MAX_SOCKETS)
        problems += p
    if threads and socks and threads * socks > MAX_SOCKETS:
        problems.append(f"NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD = {threads * socks} > "
                        f"{MAX_SOCKETS}: "
                        f"NCCL cuts the sockets per thread to {MAX_SOCKETS // threads}")
    for name in ("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA"):
        if name in get and not any(t.lstrip("=") for t in _split(get[name])[1]):
            problems.append(f"{name}={get[name]!r}: empty interface list")
    return problems
