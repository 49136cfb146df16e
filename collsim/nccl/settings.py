"""The NCCL_* variables that change NCCL's AllReduce choice, read as a given NCCL version reads
them.

``read_settings(env, version)`` -> ``Settings``. ``env`` maps names to strings (``os.environ``
style; None or {} = all defaults); variables not listed here are ignored. Files are NVIDIA/nccl
at the tag of ``collsim.nccl.constants.TAGS``.

- NCCL_ALGO / NCCL_PROTO: ``parse_list``. Up to 2.23 one comma list, case-insensitive, a leading
  ``^`` excludes, unknown names are silently ignored (tuning.cc:34-52@v2.23.4). From 2.24 an
  optional ``func:list;func:list`` map whose first entry may omit the function; an unknown name or
  function, or a later entry without one, is an error (tuning.cc:54-131@v2.28.9). A list that names
  LL128 forces it on past NCCL's own LL128 checks (value 1 instead of the default 2, tuning.cc:412,
  480@v2.28.9).
- NCCL_CROSS_NIC 0/1/2 (search.cc:15@v2.28.9), NCCL_NVLS_ENABLE 0/1/2 (nvls.cc:152), NCCL_IB_DISABLE
  0/1 (net_ib.cc:507: 1 = the socket transport), NCCL_COLLNET_ENABLE 0/1 (init.cc:59,1732-1741;
  whether it was given: a ``sharp: true`` cluster turns CollNet on unless it says 0),
  NCCL_P2P_DISABLE 0/1 (paths.cc:261-267: peers through the CPU, NCCL's SHM transport), and
  aws-ofi-nccl's OFI_NCCL_NET_LATENCY in us (the latency the EFA plugin reports,
  nccl_ofi_param.h:221@v1.21.1).
- Channel counts: NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS (connect.cc:327-353@v2.28.9),
  NCCL_MIN_CTAS, NCCL_MAX_CTAS (init.cc:1415-1416,1661-1679), NCCL_NVLS_NCHANNELS
  (init.cc:61,1752-1756).
- NCCL_NTHREADS (64..512, a multiple of 32), NCCL_LL128_NTHREADS (160..640)
  (tuning.cc:13-33,231-243), NCCL_NET_OVERHEAD in ns (tuning.cc:212-219), NCCL_BUFFSIZE in bytes
  (init.cc:700; chunking only, not the choice).

NCCL replaces several out-of-range values silently (a maximum of 0 channels becomes 1, "1e9" is read
as 1 by strtoll, param.cc ncclLoadParam); collsim refuses them instead: each bad value is a one-line
CollsimError naming the variable.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from collsim.core.collective import COLLECTIVES
from collsim.errors import CollsimError, describe
from collsim.inputs import BUFFSIZE_RANGE, MAX_CHANNELS
from collsim.nccl import NCCL_ALGOS, PROTOS
from collsim.nccl.constants import since, vnum

# the functions NCCL_ALGO / NCCL_PROTO may prefix (init.cc:49@v2.28.9): those with a cost table
FUNCS = tuple(c.nccl_name for c in COLLECTIVES.values() if c.algorithms)
MAX_ANY_CHANNELS = MAX_CHANNELS  # NCCL's MAXCHANNELS (collsim.inputs)


def algo_names(version: str) -> tuple[str, ...]:
    """ncclAlgoStr: PAT from 2.23 (init.cc:38@v2.18.6, :41@v2.24.3)."""
    return NCCL_ALGOS if vnum(version) >= (2, 23) else NCCL_ALGOS[:6]


def parse_list(var: str, value: str, names, defaults: dict, version: str) -> dict:
    """The AllReduce row of NCCL's enable list for ``var`` = ``value``: {name: 0 | 1 | default}."""
    out = dict(defaults)
    if vnum(version) < (2, 24):
        neg = value.startswith("^")
        out = {n: int(neg) for n in names}
        for token in (value[1:] if neg else value).split(","):
            for n in names:
                if token.lower() == n.lower():
                    out[n] = int(not neg)
        return out
    for i, entry in enumerate(e for e in value.split(";") if e):
        parts = [p for p in entry.split(":") if p]
        prefix, elems = (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
        if prefix is None and i > 0:
            raise CollsimError(f"{var}={value!r}: all entries except the first must name a "
                               f"function (NCCL {version})")
        if prefix is not None and prefix.lower() not in (f.lower() for f in FUNCS):
            raise CollsimError(f"{var}={value!r}: unknown function {prefix!r} (expected one of "
                               f"{', '.join(FUNCS)})")
        neg = elems.startswith("^")
        row = {n: int(neg) for n in names}
        for token in (e for e in elems.lstrip("^").split(",") if e):
            match = [n for n in names if token.lower() == n.lower()]
            if not match:
                raise CollsimError(f"{var}={value!r}: unknown name {token!r} (NCCL {version} knows "
                                   f"{', '.join(names)})")
            row[match[0]] = int(not neg)
        if prefix is None or prefix.lower() == "allreduce":
            out = row
    return out


# strtoll(str, NULL, 0) as ncclLoadParam calls it (param.cc@v2.28.9): C-locale space, a sign, then
# hex
# (0x...), octal (0...) or decimal digits, ASCII only; it stops at the first other character.
_STRTOLL = re.compile(r"[ \t\n\v\f\r]*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)?")
INT64 = (-(1 << 63), (1 << 63) - 1)


def nccl_integer(name: str, text: str) -> int:
    """``text`` as NCCL reads an integer variable (``strtoll(text, NULL, 0)``), refused where that
    reading is not what the text says: no digits (NCCL reads 0), characters after the number
    ("1_6", "1e9", "16abc", non-ASCII digits: NCCL reads what comes before them), an octal number
    ("010" is 8 to NCCL), or out of int64 (NCCL ignores it and keeps its default)."""
    shown = describe(text)
    m = _STRTOLL.match(text)
    sign, digits = m.group(1), m.group(2)
    if digits is None:
        raise CollsimError(f"{name}={shown}: not an integer (NCCL's strtoll reads no digits: 0)")
    value = int(sign + digits, 16 if digits[:2].lower() == "0x" else 8 if digits[0] == "0" else 10)
    rest = text[m.end():]
    if rest.strip(" \t\n\v\f\r"):
        raise CollsimError(f"{name}={shown}: NCCL reads it as {value} (its strtoll stops at "
                           f"{describe(rest[0])}); "
                           f"write {value} if that is meant")
    if len(digits) > 1 and digits[0] == "0" and digits[1] not in "xX":
        raise CollsimError(f"{name}={shown}: NCCL reads a leading 0 as octal, {value}; write "
                           f"{value} if that is meant")
    if not INT64[0] <= value <= INT64[1]:
        raise CollsimError(f"{name}={shown}: out of int64 (NCCL ignores it and keeps its default)")
    return value


def _int(env: dict, name: str, lo: int, hi: int, default, why: str = ""):
    if name not in env:
        return default
    value = nccl_integer(name, str(env[name]))
    if not lo <= value <= hi:
        raise CollsimError(f"{name}={value}: out of range {lo}..{hi}{why}")
    return value


def env_arguments(pairs, option: str = "--env",
                  prefix: str | tuple = ("NCCL_", "OFI_NCCL_")) -> dict:
    """The NAME=VALUE strings of every ``--env`` (each may hold several; repeated options are
    merged, ``action="extend"``) as a dict; a malformed pair, a name not starting with one of
    ``prefix``, or a name given twice with different values is one CollsimError line. Integer
    variables are read and bounded by ``read_settings`` (``check_env``) when the run's NCCL version
    is known."""
    prefix = (prefix,) if isinstance(prefix, str) else tuple(prefix)
    env: dict[str, str] = {}
    for pair in pairs or ():
        name, sep, value = str(pair).partition("=")
        if (
            not sep
            or not name.startswith(prefix)
            or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)
        ):
            raise CollsimError(f"{option} {describe(pair)}: expected "
                               f"{' or '.join(p + 'NAME=VALUE' for p in prefix)}")
        if name in env and env[name] != value:
            raise CollsimError(f"{option} {name} given twice ({describe(env[name])} and "
                               f"{describe(value)}): "
                               "give each variable once")
        env[name] = value
    return env


@dataclass(frozen=True)
class Settings:
    """Parsed NCCL settings (defaults are NCCL's). algo / proto: the AllReduce enable rows
    ({name: 0 off, 1 on, 2 LL128 "where NCCL's checks allow"}); algo_set / proto_set: whether the
    variable was given. Channel knobs are None when unset; max_ctas/min_ctas default to NCCL's
    config (MAXCHANNELS / 1, init.cc:1921-1922@v2.28.9)."""
    version: str
    algo: dict
    proto: dict
    algo_set: bool = False
    proto_set: bool = False
    cross_nic: int = 2
    nvls_enable: int = 2
    ib_disable: bool = False
    collnet_enable: bool = False
    collnet_set: bool = False
    p2p_disable: bool = False
    plugin_latency_us: float | None = None
    min_nchannels: int = 0
    max_nchannels: int | None = None
    min_ctas: int = 1
    max_ctas: int | None = None
    nvls_nchannels: int | None = None
    nthreads: int | None = None
    ll128_nthreads: int | None = None
    net_overhead_us: float | None = None
    buffsize: int | None = None
    raw: dict = field(default_factory=dict, compare=False)


def read_settings(env: dict | None, version: str) -> Settings:
    """``Settings`` from ``env`` for NCCL ``version``; CollsimError for a value NCCL would reject
    (2.24+ lists) or silently replace."""
    env = {k: str(v) for k, v in (env or {}).items() if str(k).startswith(("NCCL_", "OFI_NCCL_"))}
    names = algo_names(version)
    algo = {n: 1 for n in names}
    if "NCCL_ALGO" in env:
        algo = parse_list("NCCL_ALGO", env["NCCL_ALGO"], names, algo, version)
    proto = {"LL": 1, "LL128": 2, "Simple": 1}
    if "NCCL_PROTO" in env:
        proto = parse_list("NCCL_PROTO", env["NCCL_PROTO"], PROTOS, proto, version)
    nthreads = _int(env, "NCCL_NTHREADS", 64, 512, None)
    ll128 = _int(env, "NCCL_LL128_NTHREADS", 160, 640, None)
    for name, value in (("NCCL_NTHREADS", nthreads), ("NCCL_LL128_NTHREADS", ll128)):
        if value is not None and value % 32:
            raise CollsimError(f"{name}={value}: not a multiple of 32 (NCCL would use its maximum)")
    overhead = _int(env, "NCCL_NET_OVERHEAD", 0, 10**7, None)
    maxch = since(version, (("2.18", 32), ("2.25", 64)))
    cap = f" (NCCL {version} caps channel counts at {maxch})"
    return Settings(
        version, algo, proto, "NCCL_ALGO" in env, "NCCL_PROTO" in env,
        cross_nic=_int(env, "NCCL_CROSS_NIC", 0, 2, 2),
        nvls_enable=_int(env, "NCCL_NVLS_ENABLE", 0, 2, 2),
        ib_disable=bool(_int(env, "NCCL_IB_DISABLE", 0, 1, 0)),
        collnet_enable=bool(_int(env, "NCCL_COLLNET_ENABLE", 0, 1, 0)),
        collnet_set="NCCL_COLLNET_ENABLE" in env,
        p2p_disable=bool(_int(env, "NCCL_P2P_DISABLE", 0, 1, 0)),
        plugin_latency_us=_float(env, "OFI_NCCL_NET_LATENCY", 0.0, 1e6),
        min_nchannels=min(_int(env, "NCCL_MIN_NCHANNELS", 1, MAX_ANY_CHANNELS, 0, cap), maxch),
        max_nchannels=_capped(_int(env, "NCCL_MAX_NCHANNELS", 1, MAX_ANY_CHANNELS, None, cap),
                              maxch),
        min_ctas=min(_int(env, "NCCL_MIN_CTAS", 1, MAX_ANY_CHANNELS, 1, cap), maxch),
        max_ctas=_capped(_int(env, "NCCL_MAX_CTAS", 1, MAX_ANY_CHANNELS, None, cap), maxch),
        nvls_nchannels=_int(env, "NCCL_NVLS_NCHANNELS", 1, MAX_ANY_CHANNELS, None),
        nthreads=nthreads, ll128_nthreads=ll128,
        net_overhead_us=None if overhead is None else overhead / 1000.0,
        buffsize=_int(env, "NCCL_BUFFSIZE", *BUFFSIZE_RANGE, None,
                      " bytes (collsim.inputs.BUFFSIZE_RANGE: 32 KiB, the smallest buffer collsim "
                      "models, to 4 GiB)"), raw=env)


def _float(env: dict, name: str, lo: float, hi: float):
    """A float variable within [lo, hi] (aws-ofi-nccl's OFI_NCCL_NET_LATENCY, microseconds), or None
    when unset."""
    if name not in env:
        return None
    text = str(env[name]).strip()
    try:
        value = float(text)
    except ValueError:
        raise CollsimError(f"{name}={text!r:.30}: not a number") from None
    if not lo <= value <= hi:
        raise CollsimError(f"{name}={text:.30}: out of range {lo:g}..{hi:g}")
    return value


def _capped(value, maxch: int):
    return None if value is None else min(value, maxch)
