"""Evaluation: utility comparison, metrics, experiments, plots, reports, privacy audits.

Baselines' utility comparison, metrics, paper experiments, plots, reports and privacy
audits (docs/design.md#data-flow, #evaluation).

* :mod:`eree.evaluate.metrics` — L1 error and its ratio to noise infusion, stratified by
  population bins; Spearman rank correlation.
* :mod:`eree.evaluate.haney` — the experiments of Haney et al. 2017 §10 (Workloads 1–3,
  Rankings 1–2).
* :mod:`eree.evaluate.attacks` — the §5.2 attacks on input noise infusion, run against
  every baseline and mechanism.
* :mod:`eree.evaluate.plots`, :mod:`eree.evaluate.report` — figures and the HTML report.

Library code, callable from a notebook: no command-line code here. The ``eree evaluate``
and ``eree audit`` commands are :mod:`eree.cli.evaluate` and :mod:`eree.cli.audit`.

Evaluation code sees true values of (synthetic or test) data: that is its job. Nothing
here is on the release path.
"""
