"""The two kinds of release, as objects: what differs between ER-EE counts and GEDP sums.

:func:`eree.release.protect.protect` runs the same steps for every release (build the
mechanism objects, charge, load, measure, post-process, write); each step that differs by
data kind is a method here, chosen once by the plan's data kind — no family if-chains in
the release path.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

import polars as pl
from typing_extensions import override

from eree.engine.base import Engine, LoadedEstablishments, LoadedJobTables
from eree.errors import SpecError
from eree.mechanisms.noise import NoiseSource
from eree.privacy.accountant import PrivacyReport
from eree.release.build import BuiltPlan, split_by
from eree.release.spec import Plan
from eree.release.tables import QueryTable

#: the handle of a family's loaded data (:mod:`eree.engine.base`): opaque to the release
Loaded = TypeVar("Loaded", LoadedJobTables, LoadedEstablishments)


class ReleaseFamily(ABC, Generic[Loaded]):
    """The data-kind-specific steps of a release.

    ``Loaded`` is the type of the loaded data: an opaque handle only the engine reads
    (every question about the data is an :class:`~eree.engine.base.Engine` method).
    """

    @abstractmethod
    def check_before_load(self, plan: Plan) -> None:
        """Refuse what can be refused before any confidential byte is read."""

    @abstractmethod
    def load(self, plan: Plan, engine: Engine, *, narrow: bool = True) -> Loaded:
        """Load and validate the data with ``engine`` (docs/design.md#validation).

        With ``narrow``, only the columns the queries use are read (a release with a
        ledger reads every configured column, so that its fingerprint covers them).

        With the Spark engine, Spark reads and validates the data; the result stays
        in Spark.
        """

    @abstractmethod
    def answer_queries(
        self,
        built: BuiltPlan,
        data: Loaded,
        engine: Engine | None,
        source: NoiseSource,
        *,
        streaming: bool = False,
    ) -> Iterable[QueryTable]:
        """Run the mechanism objects; the published tables, in query order.

        With ``streaming`` (:meth:`needs_tables` is false) the caller writes each table
        before taking the next and keeps nothing of it.
        """

    def needs_tables(self, plan: Plan) -> bool:
        """Whether :meth:`postprocess` has work to do on ``plan``'s tables (default: no).

        When it has not, the release streams its tables to disk one by one and
        :meth:`postprocess` is not called.
        """
        return False

    def postprocess(
        self, built: BuiltPlan, data: Loaded, engine: Engine, tables: list[QueryTable]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Extra files and manifest entries from published values only (default: none).

        A family may also replace the entries of ``tables`` in place (publication-grade
        ER-EE counts): the list after the call is what is written.
        """
        return {}, {}

    @abstractmethod
    def semantics(self, plan: Plan, report: PrivacyReport) -> dict[str, Any]:
        """What the release guarantees, in words (docs/design.md#semantics)."""

    def n_establishments(self, data: Loaded, engine: Engine) -> int | None:
        """The number of establishments of loaded data (public), or None if unknown."""
        return None

    def frame_counts(
        self, data: Loaded, engine: Engine
    ) -> Callable[[Sequence[str]], pl.DataFrame] | None:
        """The public frame's establishment count per group of ``by``, if the family has one."""
        return None


class CountRelease(ReleaseFamily[LoadedJobTables]):
    """ER-EE data: count marginals (ER-EE mechanisms, DP baselines, noise infusion)."""

    @override
    def check_before_load(self, plan: Plan) -> None:
        if plan.postprocess.microdata:
            raise SpecError(
                "[postprocess] microdata = true applies to establishment (GEDP) releases; "
                "ER-EE count releases have no microdata reconstruction"
            )
        for q in plan.queries:  # attribute roles are checked before loading
            split_by(q, plan.data)  # type: ignore[arg-type]
        from eree.release.publication import check_publication_plan

        check_publication_plan(plan)

    @override
    def load(self, plan: Plan, engine: Engine, *, narrow: bool = True) -> LoadedJobTables:
        from eree.release.cells import check_plan_cells

        used: set[str] = set()
        for q in plan.queries:
            wp, wk = split_by(q, plan.data)  # type: ignore[arg-type]
            used.update(wp, wk)
        data = engine.load_job_tables(plan.data, sorted(used) if narrow else None)  # type: ignore[arg-type]
        # exact cell counts before cells are allocated (when the engine holds the
        # workplace frame in memory; otherwise the lower bounds checked before loading stand)
        check_plan_cells(plan, engine.public_workplaces(data))
        if plan.output.format == "lodes-wac":  # its file's name and rows are the blocks
            from eree.release.agency import check_wac_blocks, check_wac_codes, wac_mapping

            inputs = plan.data.inputs()
            file = inputs.get("[data].workplace", inputs.get("[data].jobs"))
            geo = wac_mapping(plan).columns["block"]
            blocks = engine.workplace_counts(data, [geo]).get_column(geo)
            check_wac_blocks(blocks, str(file), geo)
            check_wac_codes(plan, lambda by: engine.workplace_counts(data, by), str(file))
        return data

    @override
    def answer_queries(
        self,
        built: BuiltPlan,
        data: LoadedJobTables,
        engine: Engine | None,
        source: NoiseSource,
        *,
        streaming: bool = False,
    ) -> Iterable[QueryTable]:
        from eree.release.counts import count_tables

        if engine is None:
            from eree.engine.select import make_engine

            engine = make_engine("polars")  # the default engine
        return count_tables(built, data, engine, source, streaming=streaming)

    @override
    def needs_tables(self, plan: Plan) -> bool:
        from eree.release.publication import wanted

        return wanted(plan)

    @override
    def postprocess(
        self,
        built: BuiltPlan,
        data: LoadedJobTables,
        engine: Engine,
        tables: list[QueryTable],
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Publication-grade tables when ``[postprocess]`` asks (replaces ``tables``' entries)."""
        from eree.release.publication import publication_tables, wanted, workplace_attributes

        if not wanted(built.plan):
            return {}, {}
        # what the solve needs of the public frame: establishments per workplace combination
        frame = engine.workplace_counts(data, workplace_attributes(built.plan))
        new, entry = publication_tables(built, tables, frame)
        tables[:] = new
        return {}, {"postprocess": entry}

    @override
    def n_establishments(self, data: LoadedJobTables, engine: Engine) -> int | None:
        """The workplace frame's rows (public, docs/design.md#er-ee-data); a count with Spark."""
        return engine.n_workplaces(data)

    @override
    def semantics(self, plan: Plan, report: PrivacyReport) -> dict[str, Any]:
        if plan.privacy.definition == "blowfish":
            from eree.privacy.blowfish import blowfish_semantics

            return blowfish_semantics(report)
        from eree.privacy.semantics import er_ee_semantics

        return er_ee_semantics(report)


class EstablishmentRelease(ReleaseFamily[LoadedEstablishments]):
    """Establishment data: μ-GEDP group-by and identity queries, optional WLS microdata."""

    @override
    def check_before_load(self, plan: Plan) -> None:
        if plan.postprocess.integer or (
            plan.postprocess.consistent and not plan.postprocess.microdata
        ):
            raise SpecError(
                "[postprocess] integer applies to ER-EE count releases; consistent on "
                "establishment data needs microdata = true"
            )
        if plan.postprocess.microdata:
            from eree.release.microdata import check_microdata_plan

            check_microdata_plan(plan)

    @override
    def load(self, plan: Plan, engine: Engine, *, narrow: bool = True) -> LoadedEstablishments:
        data = engine.load_establishments(plan.data)  # type: ignore[arg-type]
        if plan.output.format is not None:  # the agency files' names and keys are codes
            from eree.release.agency import check_qcew_codes

            file = str(plan.data.inputs().get("[data].path"))
            check_qcew_codes(plan, self.frame_counts(data, engine), file)  # type: ignore[arg-type]
        return data

    @override
    def answer_queries(
        self,
        built: BuiltPlan,
        data: LoadedEstablishments,
        engine: Engine | None,
        source: NoiseSource,
        *,
        streaming: bool = False,
    ) -> Iterable[QueryTable]:
        from eree.release.gedp import release_gedp

        return release_gedp(built, data, source, engine=engine)

    @override
    def needs_tables(self, plan: Plan) -> bool:
        return plan.postprocess.microdata

    @override
    def postprocess(
        self,
        built: BuiltPlan,
        data: LoadedEstablishments,
        engine: Engine,
        tables: list[QueryTable],
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        if not built.plan.postprocess.microdata:
            return {}, {}
        from eree.release.microdata import MICRODATA_FILE, build_microdata, public_frame

        # the WLS microdata have one row per establishment with its public attributes, so
        # these columns (public, docs/design.md#establishment-data) come to the driver; no
        # confidential one does
        public = public_frame(data, engine)
        md = build_microdata(built.plan, tables, public)
        entry = {"microdata": md.manifest_entry()}
        if built.plan.postprocess.consistent:
            from eree.release.microdata import tabulated_tables

            checks: dict[str, Any] = {}
            tables[:] = tabulated_tables(
                built.plan, tables, md.frame, data.id_column, checks, md.unconstrained
            )
            entry["postprocess"] = {
                "consistent": True,
                "nonnegative": built.plan.postprocess.nonnegative,
                "method": "every published table is the tabulation of the WLS microdata "
                "(identity: the microdata values), so every table adds up to every coarser "
                "one; std and CI refer to the mechanisms' raw answers and are not published "
                "for these values",
                "privacy_cost": "none (post-processing of published values)",
                "never_worse": {
                    "method": "a (table, attribute) keeps its own published values when "
                    "the estimated squared bias of its tabulation (non-negative minus "
                    "unconstrained least squares) exceeds their published variance, summed "
                    "over its cells (then worse in mean square); with nonnegative the "
                    "solve first anchors every such grouping's totals to the combined "
                    "unbiased estimates of its cells (microdata.attributes.<a>."
                    "bias_corrected), after which none has failed in the measured settings",
                    "checks": {k: c.to_dict() for k, c in checks.items()},
                },
            }
            kept = {k: c for k, c in checks.items() if c.keep_own}
            if kept:
                entry["postprocess"]["kept_own_values"] = {
                    k: f"estimated squared bias of the tabulation {c.bias_ratio:.3g} times the "
                    "published variance: kept as its own published values (with the "
                    "mechanism's std and CI), not constrained to add up"
                    for k, c in kept.items()
                }
        return {MICRODATA_FILE: md.frame}, entry

    @override
    def n_establishments(self, data: LoadedEstablishments, engine: Engine) -> int | None:
        """The establishment file's rows (public: pnc's τ̂ uses it, Thm 6.7)."""
        return engine.n_establishments(data)

    @override
    def frame_counts(
        self, data: LoadedEstablishments, engine: Engine
    ) -> Callable[[Sequence[str]], pl.DataFrame] | None:
        """Per group of ``by``: ``establishments`` (public, docs/design.md#establishment-data)."""
        return lambda by: engine.group_sums(data, list(by), [])

    @override
    def semantics(self, plan: Plan, report: PrivacyReport) -> dict[str, Any]:
        from eree.release.gedp import gedp_plan_semantics

        return gedp_plan_semantics(plan, report)


_FAMILIES: dict[str, ReleaseFamily[Any]] = {
    "eree": CountRelease(),
    "establishments": EstablishmentRelease(),
}


def family_of(plan: Plan) -> ReleaseFamily[Any]:
    """The release family of ``plan``'s data kind."""
    return _FAMILIES[plan.kind]
