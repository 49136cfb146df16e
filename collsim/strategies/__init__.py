"""The lecture's strategies, measured beside their predictions: ``overlap`` (DDP overlap of
communication with computation), ``launch_overhead`` (launch cost and CUDA graphs), ``ddp`` and
``trace`` (measured DDP files and profiler traces), ``knobs`` and ``tables`` (the 2 x H200 strategy
measurements beside the predictions: data/h200x2/STRATEGIES.md).
"""
