"""Default column names, roles and declared domains of the ER-EE data model.

See docs/design.md#er-ee-data.

Worker attribute codes follow the LODES / QWI conventions so that files from the LEHD
infrastructure map onto them directly:

* ``age``: A01 (29 or younger), A02 (30–54), A03 (55 or older) — LODES CA01–CA03.
* ``earnings``: E01 (≤ $1,250/month), E02 ($1,251–3,333), E03 (> $3,333) — CE01–CE03.
* ``race``: A1 White, A2 Black, A3 American Indian/Alaska Native, A4 Asian,
  A5 Native Hawaiian/Pacific Islander, A7 two or more races — CR01–CR05, CR07.
* ``ethnicity``: A1 not Hispanic, A2 Hispanic — CT01–CT02.
* ``education``: E1 less than high school, E2 high school, E3 some college,
  E4 bachelor's or more — CD01–CD04.
* ``sex``: M, F — CS01–CS02.
"""

from __future__ import annotations

WORKPLACE_ID = "workplace_id"
WORKER_ID = "worker_id"

#: public workplace attributes produced by the LODES-like generator
WORKPLACE_ATTRIBUTES: tuple[str, ...] = (
    "state",
    "county",
    "tract",
    "block",
    "naics_sector",
    "ownership",
)

#: declared domains of the private worker attributes
WORKER_DOMAINS: dict[str, tuple[str, ...]] = {
    "age": ("A01", "A02", "A03"),
    "sex": ("M", "F"),
    "race": ("A1", "A2", "A3", "A4", "A5", "A7"),
    "ethnicity": ("A1", "A2"),
    "education": ("E1", "E2", "E3", "E4"),
    "earnings": ("E01", "E02", "E03"),
}

#: NAICS sectors as used by LODES (CNS01–CNS20), in column order
NAICS_SECTORS: tuple[str, ...] = (
    "11", "21", "22", "23", "31-33", "42", "44-45", "48-49", "51", "52",
    "53", "54", "55", "56", "61", "62", "71", "72", "81", "92",
)  # fmt: skip

#: ownership codes (QWI label_ownercode): A00 state & local government, A05 private;
#: federal is kept separate as A01 (QCEW own_code 1)
OWNERSHIP_CODES: tuple[str, ...] = ("A01", "A00", "A05")

#: LODES job types eree releases (LODES technical documentation, "Job types"): JT00 all
#: jobs, JT01 primary jobs, JT02 all private jobs, JT03 private primary jobs. JT04 and
#: JT05 (federal) are not offered: the federal jobs of LODES come from another source.
JOB_TYPES: dict[str, str] = {
    "JT00": "all jobs",
    "JT01": "primary jobs (each worker's highest-earning job)",
    "JT02": "all private jobs",
    "JT03": "private primary jobs (each worker's primary job, when it is private)",
}
PRIMARY_JOB_TYPES: tuple[str, ...] = ("JT01", "JT03")
PRIVATE_JOB_TYPES: tuple[str, ...] = ("JT02", "JT03")
#: the workplace column and code that mark a private job (JT02, JT03): QWI's A05
OWNERSHIP = "ownership"
PRIVATE_OWNERSHIP = "A05"
#: the data-independent order in which a worker's jobs are kept (the first k): a keyed
#: random order, SHA-256 of the release's secret order key and the job's worker and
#: workplace ids (:func:`eree.data.job_order.order_word`); for primary jobs by earnings,
#: highest first, ties in that keyed order. It reads only the worker's own jobs and a key
#: drawn independently of the data, so adding or removing one worker never changes
#: another worker's kept jobs, and no workplace is favoured by its id.
JOB_ORDER = (
    "a keyed random order (SHA-256 of a secret per-release key and the job's worker and "
    "workplace ids); primary jobs: earnings descending, ties in that keyed order"
)
