"""collsim: chunk-level schedules, cost models and simulation of AllReduce, validated against NCCL.

The loop's verbs, one from each room: ``build_schedule`` (algorithms/) makes a ``Schedule`` (core/),
``check`` proves it computes the sum, ``load_cluster`` / ``load_machine`` read the machine
(machine/), ``collsim.simulate.simulate`` times the schedule on it (the room keeps its name: a verb
of the same name here would hide it), ``predict_nccl`` predicts what NCCL itself does there
(predict/), ``collsim.diagnose.diagnose`` says whether a measured run is as fast as its machine
allows and why not. ``PREDICTORS`` says who predicts what. ``predict_nccl`` is imported when first
used: its simulation loads numba (a fifth of a second), which ``collsim --help`` and the schedule
verbs do not need.
"""
import importlib
from importlib import metadata

from collsim.algorithms import build_schedule
from collsim.core.checker import check
from collsim.core.compose import ScheduleBuilder, concat, split_even
from collsim.core.schedule import COPY, REDUCE, Schedule, ScheduleError, Transfer
from collsim.errors import CollsimError
from collsim.machine import load_cluster, load_machine
from collsim.predictors import PREDICTORS

__all__ = ["COPY", "PREDICTORS", "REDUCE", "CollsimError", "Schedule", "ScheduleBuilder",
           "ScheduleError", "Transfer", "build_schedule", "check", "concat", "load_cluster",
           "load_machine", "predict_nccl", "split_even"]


def __getattr__(name: str):
    if name == "predict_nccl":
        return importlib.import_module("collsim.predict").predict_nccl
    raise AttributeError(f"module 'collsim' has no attribute {name!r}")


try:
    __version__ = metadata.version("collsim")
except metadata.PackageNotFoundError:   # run from a checkout without installing it
    __version__ = "0.2.0"
