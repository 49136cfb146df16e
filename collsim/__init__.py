"""collsim: chunk-level schedules, cost models and simulation of AllReduce, validated against NCCL."""
from collsim.compose import ScheduleBuilder, concat, split_even
from collsim.errors import CollsimError
from collsim.schedule import COPY, REDUCE, Schedule, ScheduleError, Transfer

__all__ = ["COPY", "REDUCE", "CollsimError", "Schedule", "ScheduleBuilder", "ScheduleError",
           "Transfer", "concat", "split_even"]
__version__ = "0.1.0"
