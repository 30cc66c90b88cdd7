"""Postprocessing of noisy answers (docs/design.md#post-processing).

Unbiased estimators, published variance estimates and confidence intervals
(:mod:`eree.mechanisms.estimators`, Webb et al. Thm 6.6), and the weighted-least-squares
reconstruction of establishment microdata.

Everything here is a function of mechanism outputs and public parameters only.
"""
