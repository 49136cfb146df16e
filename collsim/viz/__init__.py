"""Pictures of schedules and simulations (matplotlib, imported inside the modules).

- ``collsim.viz.grid``: ranks x chunks grid per step, transfers as arrows (``grid_bins``: columns
  binned and arrows spread, so large schedules stay readable; ``grid_colors``: the cells' and
  transfers' colours and their legend).
- ``collsim.viz.machine``: the machine (GPUs on NVSwitch, NICs on rails) with a step's chunks
  moving.
- ``collsim.viz.timeline``: per-link and per-rank Gantt charts of a simulation.
- ``collsim.viz.animate``: the grid (and timeline cursor) as GIF or HTML animations.
- ``collsim.viz.curves``: time and busbw vs size, crossover sizes (labels that never overlap).
- ``collsim.viz.trees``: tree AllReduce shapes drawn as trees; ``tree_motion`` animates a schedule
  on them.
- ``collsim.viz.scale``: busbw against the node count, NCCL's choice marked (``predict-nccl --nodes
  A,B,...``).
- ``collsim.viz.palette``: the one colour-blind-safe palette of all of them.

Also: ``diagnose`` (a ``collsim diagnose`` report: measured busbw against the expected range),
``measured`` (the measured-vs-predicted panel), ``strategies`` and ``trace`` (DDP and launch
timelines), ``render`` (fast redraws for widgets).
"""
