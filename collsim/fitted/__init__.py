"""collsim's fitted NCCL-shaped model: a time per (algorithm, protocol) with terms fitted to real
measurements (``model_us``; ``collsim.predictors``).

How it serves the simulation: ``collsim.predictors.PREDICTORS``.

``layout`` (the parameter-free part per size: channels, pipeline steps, footprints, hops), ``model``
(time from a layout and parameters), ``params`` (the parameters file), ``rescale`` (the 2 x H200
fit, ``hopper_params.json``, rescaled to a described cluster). ``collsim fit`` fits it
(``collsim.fit``).
"""
