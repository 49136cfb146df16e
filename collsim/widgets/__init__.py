"""Interactive notebook pieces (ipywidgets 8, imported only when used).

- ``ScheduleExplorer`` (``collsim.widgets.schedule_explorer``): algorithm, P, size,
  topology; step slider with Play over the chunk grid and link timeline.
- ``CostExplorer`` (``collsim.widgets.cost_explorer``): alpha-beta closed forms and
  their crossover sizes.
- ``MeasuredVsPredicted`` (``collsim.widgets.measured``): measured points of one
  configuration beside collsim's model and NCCL's own.
- ``check_answer`` (``collsim.widgets.exercise``): the checker of notebook exercises.
"""
