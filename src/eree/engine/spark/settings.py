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

import os
import re
import socket
from collections.abc import Mapping
from typing import Any

from eree.errors import SpecError

__all__ = [
    "BYTE_SIZE",
    "MAX_THREADS_PER_CPU",
    "MIN_DRIVER_MEMORY",
    "MIN_EXECUTOR_MEMORY",
    "check_conf",
    "check_machine",
    "check_master",
    "check_master_reachable",
    "machine_cpus",
    "machine_memory",
    "redacted_conf",
]

#: local worker threads per CPU of the machine at most (more only contend; 100,000
#: threads make the JVM fail to start)
MAX_THREADS_PER_CPU = 8
#: Spark's least executor memory: 1.5 × its 300 MiB reserve (``UnifiedMemoryManager``)
MIN_EXECUTOR_MEMORY = 471_859_200
#: the least driver heap eree starts Spark with: above Spark's least, which the JVM's
#: usable heap (a little under -Xmx) must reach
MIN_DRIVER_MEMORY = 512 << 20
#: seconds a master's port may take to accept a connection before the release is refused
MASTER_CONNECT_TIMEOUT = 5.0
#: JVM options that set the heap, which has a key of its own (``[spark] driver_memory``,
#: ``spark.executor.memory``)
_HEAP_OPTION = re.compile(r"(^|\s)(-Xmx|-Xms|-XX:MaxHeapSize|-XX:InitialHeapSize)")

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
        if key == "spark.executor.memory" and spark_size(text) < MIN_EXECUTOR_MEMORY:
            raise SpecError(f"{name} must be at least 450m (Spark's least executor memory)")
    elif last == "extraJavaOptions" and _HEAP_OPTION.search(text):
        raise SpecError(
            f"{name} must not set the heap (-Xmx, -Xms): give the driver's as [spark] "
            "driver_memory and the executors' as spark.executor.memory"
        )
    elif last == "enabled":
        if text.lower() not in ("true", "false"):
            raise SpecError(f"{name} must be true or false")
        text = text.lower()
    elif not text:
        raise SpecError(f"{name} must not be empty")
    return text


_SPARK_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
                "p": 1 << 50}  # fmt: skip


def spark_size(text: str) -> int:
    """Bytes of a size as Spark reads it (:data:`BYTE_SIZE`; no unit: bytes)."""
    m = re.fullmatch(r"([0-9]+)([a-zA-Z]*)", text.strip())
    if m is None:
        raise ValueError(text)
    unit = m[2].lower().removesuffix("b") if m[2].lower() != "b" else "b"
    return int(m[1]) * _SPARK_UNITS[unit]


def machine_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def machine_memory(meminfo: str = "/proc/meminfo") -> int | None:
    """The machine's memory (``MemTotal``), or None where the system does not say."""
    try:
        with open(meminfo, encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _local_threads(master: str, cores: int, cpus: int) -> int | None:
    """Worker threads of a local master (None for a cluster's)."""
    if master == "local":
        return 1
    m = re.fullmatch(r"local\[(\*|[0-9]+)(,[0-9]+)?\]", master)
    if m is None:
        return None
    return cpus if m[1] == "*" else int(m[1])


def check_machine(
    cores: int,
    driver_memory: str,
    master: str | None,
    *,
    cpus: int | None = None,
    memory: int | None = None,
) -> None:
    """Settings of a session eree starts, bounded by this machine, before Java starts.

    The driver runs here whatever the master: its heap (``[spark] driver_memory``) must
    be at least :data:`MIN_DRIVER_MEMORY` and at most the machine's memory. A local master
    runs its worker threads here too: at most :data:`MAX_THREADS_PER_CPU` per CPU.

    Raises:
        SpecError: naming the key, the bound and the machine's figure.
    """
    cpus = machine_cpus() if cpus is None else cpus
    memory = machine_memory() if memory is None else memory
    heap = spark_size(driver_memory)
    if heap < MIN_DRIVER_MEMORY:
        raise SpecError(
            "[spark].driver_memory must be at least 512m (Spark needs 450 MiB of driver "
            "heap to start)"
        )
    if memory is not None and heap > memory:
        raise SpecError(
            f"[spark].driver_memory ({driver_memory}) is more than this machine's memory "
            f"({memory / (1 << 30):,.1f} GiB), where the driver runs"
        )
    most = MAX_THREADS_PER_CPU * cpus
    if master is None:
        if cores > most:
            raise SpecError(
                f"[spark].cores ({cores:,}) must be at most {most:,}: {MAX_THREADS_PER_CPU} "
                f"local worker threads per CPU of this machine ({cpus})"
            )
        return
    threads = _local_threads(master, cores, cpus)
    if threads is not None and threads > most:
        raise SpecError(
            f"[spark].master {master}: at most {most:,} local worker threads "
            f"({MAX_THREADS_PER_CPU} per CPU of this machine, {cpus})"
        )


def check_master_reachable(master: str, timeout: float = MASTER_CONNECT_TIMEOUT) -> None:
    """A standalone or Kubernetes master answers on its port, within ``timeout`` seconds.

    Spark itself retries an unresponsive standalone master for a minute and more before
    it gives up; a port that accepts no connection is refused at once instead. YARN's
    address is in the cluster's configuration, not the URL: not checked here.

    Raises:
        EngineError: naming the master when none of its addresses accepts a connection.
    """
    from eree.errors import EngineError

    if master.startswith("spark://"):
        addresses = master.removeprefix("spark://").split(",")
    elif master.startswith("k8s://"):
        rest = master.removeprefix("k8s://")
        https = not rest.startswith("http://")
        rest = rest.split("://", 1)[-1]
        addresses = [rest if ":" in rest else f"{rest}:{443 if https else 80}"]
    else:
        return
    for address in addresses:
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return
        except (OSError, ValueError):
            continue
    raise EngineError(
        f"the Spark master {master} does not answer (no connection to "
        f"{', '.join(addresses)} within {timeout:g} s): check [spark] master (or --master) "
        "and that the master runs"
    )


def redacted_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` with the values Spark itself keeps out of its logs withheld."""
    return {k: ("withheld" if _SECRET.search(k) else v) for k, v in conf.items()}
