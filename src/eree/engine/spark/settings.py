"""The Spark settings a spec or the command line may give, checked before Java starts.

``[spark] master`` (or ``eree protect --master``) names the cluster manager a new
session connects to, in Spark's own spelling: ``local``, ``local[N]``, ``local[*]``,
``spark://host:port`` (a standalone master, several separated by commas for standby
masters), ``yarn``, ``k8s://https://host:port``. ``[spark.conf]`` (or ``--conf
KEY=VALUE``) holds further Spark configuration, applied when eree starts the session
(docs/spark-cluster.md). Both are checked here, each fault one line naming the key;
nothing here imports PySpark.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from eree.errors import SpecError

__all__ = [
    "BYTE_SIZE",
    "check_conf",
    "check_master",
    "redacted_conf",
]

_MASTER = re.compile(
    r"local(\[(\*|[1-9][0-9]*)(,[1-9][0-9]*)?\])?"
    r"|spark://[A-Za-z0-9.\-]+:[0-9]{1,5}(,[A-Za-z0-9.\-]+:[0-9]{1,5})*"
    r"|yarn"
    r"|k8s://(https?://)?[A-Za-z0-9.\-]+(:[0-9]{1,5})?"
)

#: a size as Spark reads it (``JavaUtils.byteStringAs``): a whole number with an optional
#: unit b, k, kb, m, mb, g, gb, t, tb, p or pb (any case)
BYTE_SIZE = re.compile(r"[0-9]{1,12}([bB]|[kKmMgGtTpP][bB]?)?")

_KEY = re.compile(r"spark\.[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*")

#: keys that have a spec key of their own (one meaning each), or that eree cannot use
_REFUSED = {
    "spark.master": "give the master as [spark] master (or --master)",
    "spark.driver.memory": "give the driver heap as [spark] driver_memory",
    "spark.remote": "Spark Connect is not supported: give the cluster's master instead",
    "spark.api.mode": "Spark Connect is not supported: give the cluster's master instead",
}

#: settings that take a whole number of at least 1
_POSITIVE_INTEGER = {
    "spark.cores.max",
    "spark.default.parallelism",
    "spark.driver.cores",
    "spark.executor.cores",
    "spark.executor.instances",
    "spark.sql.shuffle.partitions",
    "spark.task.cpus",
    "spark.task.maxFailures",
}

#: the last part of a key whose value is a size (``spark.executor.memory = "2g"``)
_SIZE_SUFFIXES = ("memory", "memoryOverhead", "maxResultSize", "Bytes")

#: what Spark itself withholds from its logs (``spark.redaction.regex``)
_SECRET = re.compile(r"(?i)secret|password|token|access[.]?key")


def check_master(value: Any, where: str = "[spark].master") -> str:
    """``value`` if it is a master URL eree can pass to Spark, else a :class:`SpecError`."""
    if not (isinstance(value, str) and _MASTER.fullmatch(value)):
        raise SpecError(
            f"{where} must be a Spark master URL: local, local[N], local[*], "
            "spark://host:port, yarn or k8s://https://host:port"
        )
    return value


def check_conf(conf: Any, where: str = "[spark.conf]") -> dict[str, str]:
    """Spark settings as text, each checked; a :class:`SpecError` naming the key if not.

    Keys are Spark's (``spark.…``); values are text, whole numbers, numbers or booleans
    (written as Spark reads them). Sizes (``….memory``, ``….memoryOverhead``,
    ``….maxResultSize``, ``…Bytes``) must be Spark sizes ("2g", "512m"); counts of cores,
    partitions, instances and task attempts whole numbers of at least 1; ``….enabled``
    true or false. The master and the driver heap have keys of their own; Spark Connect
    is refused.
    """
    if not isinstance(conf, Mapping):
        raise SpecError(
            f'{where} must be a table of Spark settings, e.g. "spark.executor.memory" = "2g"'
        )
    out: dict[str, str] = {}
    for key, value in conf.items():
        name = f'{where} "{key!s}"'
        if not (isinstance(key, str) and _KEY.fullmatch(key)):
            raise SpecError(f"{name}: not a Spark setting (the keys start with 'spark.')")
        if key in _REFUSED:
            raise SpecError(f"{name}: {_REFUSED[key]}")
        out[key] = _value(key, value, name)
    return out


def _value(key: str, value: Any, name: str) -> str:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int | float):
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise SpecError(f"{name} must be text, a number or true/false")
    last = key.rsplit(".", 1)[-1]
    if key in _POSITIVE_INTEGER:
        if not re.fullmatch(r"[1-9][0-9]{0,8}", text):
            raise SpecError(f"{name} must be a whole number of at least 1")
    elif last.endswith(_SIZE_SUFFIXES) or key == "spark.memory.offHeap.size":
        if not BYTE_SIZE.fullmatch(text):
            raise SpecError(
                f"{name} must be a size in quotes, a whole number with an optional unit "
                'k, m, g or t (e.g. "2g" or "512m")'
            )
    elif last == "enabled":
        if text.lower() not in ("true", "false"):
            raise SpecError(f"{name} must be true or false")
        text = text.lower()
    elif not text:
        raise SpecError(f"{name} must not be empty")
    return text


def redacted_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` with the values Spark itself keeps out of its logs withheld."""
    return {k: ("withheld" if _SECRET.search(k) else v) for k, v in conf.items()}
