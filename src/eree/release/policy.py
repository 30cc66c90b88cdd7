"""The site's release policy: what an office requires of every release made on a machine.

The model (docs/privacy.md, "The office policy"):

* **The office file** ``/etc/eree/site.toml`` is authoritative. Only root (or whoever
  the office lets write ``/etc/eree``) sets it::

      [release]
      require_ledger = true                       # every publishable output is charged
      ledger = "/srv/eree/office-ledger.sqlite"   # ... to this ledger, no other
      allow_without_ledger = ["suppress"]         # commands the office lets run uncharged

* **A user's file** named by ``EREE_SITE_CONFIG`` and the variable
  ``EREE_REQUIRE_LEDGER=1`` may only make the policy *stricter*: they can switch
  ``require_ledger`` on (a ``false`` or ``0`` there changes nothing), and can name a
  ledger only where the office names none (naming another ledger than the office's is
  an error). ``allow_without_ledger`` is the office's alone (an error elsewhere).
* A site file that exists but cannot be read as a small regular TOML file — a FIFO, a
  device, a directory, a dangling link, over 1 MiB, nested too deeply — is an error
  (one line, exit 2), never "no policy".

With ``require_ledger``, every command that reads confidential data and writes or prints
anything derived from it either is charged to the ledger (``eree protect --ledger``) or is
refused, unless the office file lists it in ``allow_without_ledger``
(:func:`require_uncharged_allowed`). Seeded releases of ``eree protect`` (experiments,
never published, never charged) stay allowed. With a named ledger, a charged release must
go to that ledger (:meth:`SitePolicy.check_ledger`). The policy in force and where each
setting came from are recorded in the manifest (``policy``).
"""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eree.errors import SpecError

__all__ = [
    "SITE_FILE",
    "UNCHARGED_COMMANDS",
    "SitePolicy",
    "require_uncharged_allowed",
    "site_policy",
]

#: the office file: authoritative (an environment variable may only make it stricter)
SITE_FILE = Path("/etc/eree/site.toml")
_ENV_FILE = "EREE_SITE_CONFIG"
_ENV_REQUIRE = "EREE_REQUIRE_LEDGER"
_KEYS = {"release": {"require_ledger", "ledger", "allow_without_ledger"}}
#: the largest site file read (a policy is a few lines)
_MAX_BYTES = 1 << 20

#: the commands that read confidential data, write or print what they derive from it, and
#: cannot be charged to a ledger: refused under ``require_ledger`` unless the office file
#: lists them in ``allow_without_ledger`` (docs/privacy.md)
UNCHARGED_COMMANDS = (
    "suppress",
    "coarsen",
    "audit suppression",
    "audit noise-infusion",
    "audit claims",
    "evaluate",
)


@dataclass(frozen=True)
class SitePolicy:
    """The policy in force.

    Attributes:
        require_ledger: a publishable output must be charged to a ledger.
        ledger: the office's ledger, when a site file names one (every charge goes there).
        allow_without_ledger: commands the office file lets run without a ledger.
        set_by: per setting, where it was set (a file or the environment variable).
    """

    require_ledger: bool = False
    ledger: Path | None = None
    allow_without_ledger: tuple[str, ...] = ()
    set_by: dict[str, str] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """Where ``require_ledger`` was set ("" when it is off)."""
        return self.set_by.get("require_ledger", "")

    def describe(self) -> dict[str, Any]:
        """What the manifest records: each setting and where it came from."""
        return {
            "require_ledger": self.require_ledger,
            "ledger": None if self.ledger is None else str(self.ledger),
            "allow_without_ledger": list(self.allow_without_ledger),
            "set_by": dict(self.set_by),
        }

    def check_ledger(self, ledger: Path) -> None:
        """Refuse a charge to any ledger but the office's (when the policy names one).

        The same file reached through another path (a link, a relative path) is the
        office's ledger; a missing ledger is compared by its resolved path.

        Raises:
            SpecError: the ledger is not the office's.
        """
        if self.ledger is None or _same_file(Path(ledger), self.ledger):
            return
        raise SpecError(
            f"the site policy ({self.set_by.get('ledger', '')}) charges every release to the "
            f"office's ledger {self.ledger}; --ledger {ledger} is another ledger"
        )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def _read(path: Path) -> dict[str, Any]:
    """Parse a site file: a small regular TOML file (FIFOs, devices, links to nothing refused)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        why = "a link to nothing" if path.is_symlink() and not path.exists() else None
        raise SpecError(
            f"site policy file {path}: cannot read it ({why or e.strerror or type(e).__name__})"
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SpecError(f"site policy file {path}: not a regular file")
        if st.st_size > _MAX_BYTES:
            raise SpecError(f"site policy file {path}: larger than {_MAX_BYTES} bytes")
        data = os.read(fd, _MAX_BYTES + 1)
    except OSError as e:
        raise SpecError(
            f"site policy file {path}: cannot read it ({e.strerror or type(e).__name__})"
        ) from None
    finally:
        os.close(fd)
    if len(data) > _MAX_BYTES:
        raise SpecError(f"site policy file {path}: larger than {_MAX_BYTES} bytes")
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SpecError(f"site policy file {path}: not valid TOML ({e})") from None
    except RecursionError:
        raise SpecError(f"site policy file {path}: not valid TOML (nested too deeply)") from None
    for section, value in raw.items():
        if section not in _KEYS or not isinstance(value, dict):
            raise SpecError(f"site policy file {path}: unknown section [{section}]")
        for key in value:
            if key not in _KEYS[section]:
                raise SpecError(f"site policy file {path}: unknown key {section}.{key}")
    release = raw.get("release", {})
    flag = release.get("require_ledger", False)
    if not isinstance(flag, bool):
        raise SpecError(f"site policy file {path}: release.require_ledger must be true or false")
    led = release.get("ledger")
    if led is not None and (not isinstance(led, str) or not led.strip()):
        raise SpecError(f"site policy file {path}: release.ledger must be a file path")
    if led is not None and not Path(led).is_absolute():
        raise SpecError(f"site policy file {path}: release.ledger must be an absolute path")
    allow = release.get("allow_without_ledger", [])
    if not isinstance(allow, list) or any(a not in UNCHARGED_COMMANDS for a in allow):
        raise SpecError(
            f"site policy file {path}: release.allow_without_ledger must list commands among "
            f"{', '.join(repr(c) for c in UNCHARGED_COMMANDS)}"
        )
    return release


def site_policy() -> SitePolicy:
    """Read the policy: the office file, then what may only tighten it (module docstring).

    Raises:
        SpecError: a site file that is missing (when named), unreadable or invalid, a
            user file that tries to loosen or contradict the office file, or a bad value
            of ``EREE_REQUIRE_LEDGER``; the message names the file or variable.
    """
    require = False
    ledger: Path | None = None
    allow: tuple[str, ...] = ()
    set_by: dict[str, str] = {}
    office = SITE_FILE
    if os.path.lexists(office):
        r = _read(office)
        if r.get("require_ledger"):
            require, set_by["require_ledger"] = True, str(office)
        if r.get("ledger") is not None:
            ledger, set_by["ledger"] = Path(r["ledger"]), str(office)
        if r.get("allow_without_ledger"):
            allow = tuple(r["allow_without_ledger"])
            set_by["allow_without_ledger"] = str(office)
    named = os.environ.get(_ENV_FILE)
    if named:
        path = Path(named)
        if not os.path.lexists(path):
            raise SpecError(f"{_ENV_FILE}={named}: no such site policy file")
        r = _read(path)
        if "allow_without_ledger" in r:
            raise SpecError(
                f"site policy file {path}: release.allow_without_ledger is set by the office "
                f"file only ({office}); {_ENV_FILE} may only make the policy stricter"
            )
        if r.get("require_ledger") and not require:
            require, set_by["require_ledger"] = True, str(path)
        if r.get("ledger") is not None:
            mine = Path(r["ledger"])
            if ledger is not None and not _same_file(mine, ledger):
                raise SpecError(
                    f"site policy file {path}: names the ledger {mine}, but the office file "
                    f"{office} names {ledger}; {_ENV_FILE} may only make the policy stricter"
                )
            if ledger is None:
                ledger, set_by["ledger"] = mine, str(path)
    env = os.environ.get(_ENV_REQUIRE)
    if env is not None:
        if env.strip() not in ("0", "1"):
            raise SpecError(f"{_ENV_REQUIRE} must be 0 or 1 (got {env!r})")
        if env.strip() == "1" and not require:
            require, set_by["require_ledger"] = True, _ENV_REQUIRE
    return SitePolicy(require, ledger, allow, set_by)


def require_uncharged_allowed(command: str, what: str) -> None:
    """Refuse a command that cannot be charged, under ``require_ledger`` (module docstring).

    Args:
        command: the command's name as the office file lists it (:data:`UNCHARGED_COMMANDS`).
        what: the confidential input it was given (for the message), e.g. ``"--data"``.

    Raises:
        SpecError: the policy requires a ledger and the office file does not allow it.
    """
    policy = site_policy()
    if not policy.require_ledger or command in policy.allow_without_ledger:
        return
    raise SpecError(
        f"the site policy ({policy.source}) requires every output derived from confidential "
        f"data to be charged to a ledger; 'eree {command}' on {what} cannot be charged and "
        f'is refused (the office file may allow it: allow_without_ledger = ["{command}"])'
    )
