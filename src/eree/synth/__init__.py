"""Synthetic data generators (DESIGN.md §8).

* :mod:`eree.synth.lodes` — LODES-like ER-EE tables (workplace, worker, job): from a real
  LODES WAC file (:func:`~eree.synth.lodes.synth_from_wac`, block margins reproduced
  exactly, heavy-tailed establishment sizes, ``scale`` knob) or from a parametric model
  (:func:`~eree.synth.lodes.synth_parametric`, used by ``eree demo``).
* QCEW-like establishment microdata (Appendix A of the QCEW paper) live beside it.
"""
