"""What a user's logs say about AllReduce on their machine: ``collsim diagnose``.

"Is my AllReduce as fast as this hardware allows, and if not, why?" In loop order: ``parsers``
(small parsers: nvidia-smi topo -m, ibstatus/ibstat/ibv_devinfo, NCCL_* settings and command lines,
host-pair tables), ``sources`` (each file recognised by its content: nccl-tests output of any
version, NCCL_DEBUG lines, the parsers' kinds, collsim records; unreadable files named and skipped),
``runs`` (several runs pasted into one file split, each with its NCCL version; a log of another
collective is read, predicted and judged as that collective), ``evidence`` (what the files reveal,
each fact with its ``file:line``), ``causes`` (one table of cause records: evidence patterns, effect
on bandwidth, fix, the file that settles it, a citation), ``expected`` (the cluster the files
describe and ``predict-nccl``'s busbw for the measured sizes, NCCL's own model beside it),
``checks`` (evidence computed from facts), ``verdict`` (bands, expected range, verdict, ranked
causes: ``diagnose``) and ``report`` (the text the command prints).

``topo_xml`` reads NCCL's topology dump; ``hits`` is the computed evidence record;
``measurement_checks`` the measurement's own errors; ``judged`` the algorithm that ran; ``answers``
the five questions users ask.
"""
from __future__ import annotations

from collsim.diagnose.causes import CAUSES, LABELS
from collsim.diagnose.verdict import diagnose, diagnose_sources, diagnose_text

__all__ = ["CAUSES", "LABELS", "diagnose", "diagnose_sources", "diagnose_text"]
