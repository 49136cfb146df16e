"""collsim: chunk-level schedules, cost models and simulation of AllReduce, validated against NCCL.

The loop's verbs, one from each room: ``build_schedule`` (algorithms/) makes a ``Schedule`` (core/),
``check`` proves it computes the sum, ``load_cluster`` / ``load_machine`` read the machine
(machine/), ``simulate`` times the schedule on it (simulate/), ``predict_nccl`` predicts what NCCL
itself does there (predict.py), ``diagnose`` says whether a measured run is as fast as its machine allows
and why not (diagnose/). ``PREDICTORS`` says who predicts what.
"""
from importlib import metadata

from collsim.algorithms import build_schedule
from collsim.core.checker import check
from collsim.core.compose import ScheduleBuilder, concat, split_even
from collsim.core.schedule import COPY, REDUCE, Schedule, ScheduleError, Transfer
from collsim.diagnose import diagnose
from collsim.errors import CollsimError
from collsim.machine import load_cluster, load_machine
from collsim.predict import predict_nccl
from collsim.predictors import PREDICTORS
from collsim.simulate import simulate

__all__ = ["COPY", "PREDICTORS", "REDUCE", "CollsimError", "Schedule", "ScheduleBuilder", "ScheduleError",
           "Transfer", "build_schedule", "check", "concat", "diagnose", "load_cluster", "load_machine", "predict_nccl",
           "simulate", "split_even"]
try:
    __version__ = metadata.version("collsim")
except metadata.PackageNotFoundError:   # run from a checkout without installing it
    __version__ = "0.2.0"
