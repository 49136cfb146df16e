"""collsim's fitted NCCL-shaped model: a time per (algorithm, protocol) with terms fitted to real
measurements (``model_us``; ``collsim.predictors``).

collsim predicts a time two ways. The event simulation (collsim simulate, simulated_us) runs a checked
schedule transfer by transfer on a described machine and shows where every byte goes and which resource
binds, for NCCL's schedules or your own. The fitted model (collsim predict-nccl, model_us) takes NCCL's own
choice of algorithm, protocol and channels and times it with collsim's NCCL-shaped model, fitted to real
measurements and rescaled to the machine; it knows NCCL's protocols, pipelining and launch costs, which the
simulation does not, so the two differ at small and mid sizes and for NCCL's trees on 4 or more nodes,
where the simulation's schedule-order contention under-serves them.

``layout`` (the parameter-free part per size: channels, pipeline steps, footprints, hops), ``model``
(time from a layout and parameters), ``params`` (the parameters file), ``rescale`` (the 2 x H200 fit,
``hopper_params.json``, rescaled to a described cluster). ``collsim fit`` fits it (``collsim.fit``).
"""
