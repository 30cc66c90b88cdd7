"""eree: formally private releases of employer-employee and establishment statistics.

The package follows the one-way data flow of docs/design.md#data-flow::

    spec -> plan -> load + validate -> engine (cell statistics) -> mechanisms
         -> postprocess -> release

Lower layers never import upper ones.
"""

__version__ = "0.1.0"
