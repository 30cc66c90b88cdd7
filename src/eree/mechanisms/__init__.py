"""Mechanisms: frozen objects over cell statistics, parameters and a noise source.

See docs/design.md#cells.

Importing the package loads :mod:`eree.mechanisms.registry`, which gives every mechanism
class its registry name.
"""

from eree.mechanisms import registry as registry
