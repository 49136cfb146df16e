"""What a collective is, before any time: the schedule core.

``schedule`` (the one columnar schedule representation), ``document`` (its JSON schema and checks),
``compose`` (building and composing schedules: builder, even splits, concat, wavefront, interleave),
``checker`` (proves a schedule computes the sum by executing it, and names the first wrong
transfer), ``atoms`` (a schedule's atoms and the plain step executor), ``execution`` (per-step
contribution states), ``budget`` (the memory a schedule's building, checking and simulation will
hold, estimated and bounded before the work) and ``rank_plan`` (a schedule as each rank runs it on a
real backend).
"""
