"""collsim's fitted NCCL-shaped model: a time per (algorithm, protocol) with terms fitted to real
measurements (``model_us``; ``collsim.predictors``).

collsim predicts NCCL's time one way: the event simulation (simulated_us) runs a checked schedule
transfer by transfer on a described machine, with NCCL's protocol costs, pipeline and channels, and
shows where every byte goes and which resource binds. collsim simulate runs your schedule or, on a
described cluster, the one NCCL runs, and collsim predict-nccl takes NCCL's own choice of algorithm,
protocol and channels, simulates that schedule and adds what the measurement harness adds. The
fitted model (model_us) supplies the simulation's per-transfer costs, fitted to real measurements
and rescaled to the machine, and NCCL's own model (nccl_us) is drawn beside collsim's, never used as
it.

``layout`` (the parameter-free part per size: channels, pipeline steps, footprints, hops), ``model``
(time from a layout and parameters), ``params`` (the parameters file), ``rescale`` (the 2 x H200
fit, ``hopper_params.json``, rescaled to a described cluster). ``collsim fit`` fits it
(``collsim.fit``).
"""
