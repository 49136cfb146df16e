"""Who predicts a time: the names every result, column and JSON key uses, and the three sentences
that say what each predictor is for (``PREDICTORS``: the same text in README and both commands'
``--help``; ``collsim.simulate`` and ``collsim.fitted`` point here; a test keeps them equal).

- ``simulated_us``: collsim's event simulation of a schedule on a described machine
  (``collsim.simulate``), what ``collsim predict-nccl`` prints for the schedule NCCL runs
  (``collsim.predict``);
- ``model_us``: collsim's fitted NCCL-shaped model (``collsim.fitted``), whose parameters cost the
  simulation's transfers and which ``collsim compare --params`` scores on its own;
- ``nccl_us``: NCCL's own tuning model, ported (``collsim.nccl``), drawn beside collsim's, never
  used as it;
- ``measured_us``: a measurement.
"""
from __future__ import annotations

SIMULATED, MODEL, NCCL, MEASURED = "simulated_us", "model_us", "nccl_us", "measured_us"
NAMES = {SIMULATED: "collsim's event simulation", MODEL: "collsim's fitted model",
         NCCL: "NCCL's own model", MEASURED: "measured"}

PREDICTORS = (
    "collsim predicts NCCL's time one way: the event simulation (simulated_us) runs a checked "
    "schedule transfer by transfer on a described machine, with NCCL's protocol costs, pipeline "
    "and channels, and shows where every byte goes and which resource binds. collsim simulate runs "
    "your schedule or, on a described cluster, the one NCCL runs, and collsim predict-nccl takes "
    "NCCL's own choice of algorithm, protocol and channels, simulates that schedule and adds what "
    "the measurement harness adds. The fitted model (model_us) supplies the simulation's "
    "per-transfer costs, fitted to real measurements and rescaled to the machine, and NCCL's own "
    "model (nccl_us) is drawn beside collsim's, never used as it.")
