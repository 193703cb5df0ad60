"""Studies: questions asked over many configurations, each one evaluated through :mod:`spn.pipeline`.

``spn.pipeline`` answers one question about one configuration; the modules here ask it again and
again and put the answers together (docs/design.md §2, §5.6): :mod:`~spn.studies.plan` (the smallest
value of a parameter or share of a queue meeting a target, ``spn plan``; its targets in
:mod:`~spn.studies.targets`, its answer a :mod:`~spn.studies.plan_result`), :mod:`~spn.studies.sweep` with
:mod:`~spn.studies.sweep_grid`, :mod:`~spn.studies.sweep_files` and :mod:`~spn.studies.plot` (``spn sweep``), :mod:`~spn.studies.predict` (``spn predict``),
:mod:`~spn.studies.backtest` (prediction errors against measured runs) and :mod:`~spn.studies.compare`
(analytic against simulated, ``spn compare``). They sit above the pipeline and below the CLI.

>>> from spn.studies.plan import plan
>>> r = plan("models/mapreduce.yaml", "cluster.containers=1..16", ["mean<=14"])
>>> r.answer, r.neighbour
(4, 3)
"""
