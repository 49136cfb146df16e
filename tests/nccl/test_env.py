import pytest

from collsim.nccl.env import FRAMEWORKS, LECTURE_ERRORS, VARIABLES, check_env

LECTURE_VARS = ["NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
                "NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD", "NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE",
                "NCCL_IB_HCA", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS",
                "NCCL_NVLS_ENABLE"]


def test_every_lecture_variable_is_described():
    assert sorted(VARIABLES) == sorted(LECTURE_VARS)
    for v in VARIABLES.values():
        assert v.selects and v.default and v.values
    assert "NCCL_NSOCKS" not in VARIABLES
    assert any("NCCL_NSOCKS is not" in e for e in LECTURE_ERRORS)
    assert "MirroredStrategy" in FRAMEWORKS and '"nccl"' in FRAMEWORKS


def test_good_settings_have_no_problems():
    env = {"NCCL_ALGO": "Ring,tree", "NCCL_PROTO": "^LL128", "NCCL_BUFFSIZE": "8388608",
           "NCCL_MIN_NCHANNELS": "4", "NCCL_MAX_NCHANNELS": "16", "NCCL_SOCKET_NTHREADS": "4",
           "NCCL_NSOCKS_PERTHREAD": "16", "NCCL_SOCKET_IFNAME": "^docker,lo", "NCCL_IB_DISABLE": "0",
           "NCCL_IB_HCA": "=mlx5_0:1", "NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "0",
           "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,GRAPH,TUNING", "NCCL_NVLS_ENABLE": "0",
           "NCCL_HOSTID": "node0", "PATH": "/usr/bin"}
    assert check_env(env) == []
    assert check_env({"NCCL_ALGO": "allreduce:tree;broadcast:ring"}) == []


@pytest.mark.parametrize("env, fragment", [
    ({"NCCL_NSOCKS": "4"}, "NCCL_NSOCKS is not an NCCL variable"),
    ({"NCCL_ALGO": "ring,butterfly"}, "unknown butterfly"),
    ({"NCCL_PROTO": "LL256"}, "unknown LL256"),
    ({"NCCL_DEBUG": "LOUD"}, "NCCL_DEBUG='LOUD'"),
    ({"NCCL_DEBUG_SUBSYS": "INIT,TUNNING"}, "unknown TUNNING"),
    ({"NCCL_IB_DISABLE": "yes"}, "expected 0 or 1"),
    ({"NCCL_BUFFSIZE": "8MB"}, "not an integer"),
    ({"NCCL_BUFFSIZE": "0"}, "out of range"),
    ({"NCCL_MAX_NCHANNELS": "128"}, "out of range 1..64"),
    ({"NCCL_MIN_NCHANNELS": "16", "NCCL_MAX_NCHANNELS": "8"}, "MIN_NCHANNELS=16 > NCCL_MAX_NCHANNELS=8"),
    ({"NCCL_SOCKET_NTHREADS": "32"}, "out of range 0..16"),
    ({"NCCL_SOCKET_NTHREADS": "8", "NCCL_NSOCKS_PERTHREAD": "16"}, "= 128 > 64"),
    ({"NCCL_SOCKET_IFNAME": ""}, "empty interface list"),
])
def test_bad_settings_are_named(env, fragment):
    problems = check_env(env)
    assert len(problems) == 1 and fragment in problems[0]
