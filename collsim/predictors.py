"""Who predicts a time: the names every result, column and JSON key uses, and the three sentences that say
what each predictor is for (``PREDICTORS``: the same text in README, ``collsim.simulate``,
``collsim.fitted`` and both commands' ``--help``; a test keeps them equal).

- ``simulated_us``: collsim's event simulation of a schedule on a described machine (``collsim.simulate``);
- ``model_us``: collsim's fitted NCCL-shaped model (``collsim.fitted``);
- ``nccl_us``: NCCL's own tuning model, ported (``collsim.nccl``), drawn beside collsim's, never used as it;
- ``measured_us``: a measurement.
"""
from __future__ import annotations

SIMULATED, MODEL, NCCL, MEASURED = "simulated_us", "model_us", "nccl_us", "measured_us"
NAMES = {SIMULATED: "collsim's event simulation", MODEL: "collsim's fitted model", NCCL: "NCCL's own model",
         MEASURED: "measured"}

PREDICTORS = (
    "collsim predicts a time two ways. The event simulation (collsim simulate, simulated_us) runs a checked "
    "schedule transfer by transfer on a described machine and shows where every byte goes and which resource "
    "binds, for NCCL's schedules or your own. The fitted model (collsim predict-nccl, model_us) takes NCCL's own "
    "choice of algorithm, protocol and channels and times it with collsim's NCCL-shaped model, fitted to real "
    "measurements and rescaled to the machine; it knows NCCL's protocols, pipelining and launch costs, which the "
    "simulation does not, so the two differ at small and mid sizes and for NCCL's trees on 4 or more nodes, "
    "where the simulation's schedule-order contention under-serves them.")
