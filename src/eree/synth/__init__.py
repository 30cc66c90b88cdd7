"""Synthetic data generators (docs/design.md#synthetic-data).

* :mod:`eree.synth.lodes` — LODES-like ER-EE tables (workplace, worker, job): from a real
  LODES WAC file (:func:`~eree.synth.lodes.synth_from_wac`, block margins reproduced
  exactly, heavy-tailed establishment sizes, ``scale`` knob) or from a parametric model
  (:func:`~eree.synth.lodes.synth_parametric`, used by ``eree demo``).
* :mod:`eree.synth.qcew` — QCEW-like establishment microdata (Appendix A of the QCEW
  paper): from real QCEW by-area files or from a parametric model. Its jobs are
  :mod:`~eree.synth.qcew_impute` (suppressed cells imputed), :mod:`~eree.synth.qcew_split`
  (cells split into establishments, Algorithms 2, 6, 7), :mod:`~eree.synth.qcew_parametric`
  (the parametric model) and :mod:`~eree.synth.qcew_microdata` (schema, container,
  writer); the QCEW codes and the file reader are :mod:`eree.data.qcew`.
* :mod:`eree.synth.national` — national-size LODES-like and QCEW-like data, written
  streaming and partitioned.
* :mod:`eree.synth.starter` — the starter release specs written next to synthetic data.
"""
