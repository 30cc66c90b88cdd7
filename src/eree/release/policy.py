"""The site's release policy: what an office requires of every release made on a machine.

An office sets it once, outside any spec, so that an analyst cannot forget it:

* a site file, ``/etc/eree/site.toml`` or the file named by ``EREE_SITE_CONFIG``::

      [release]
      require_ledger = true   # a publishable (secure) release must be charged to a ledger

* or the environment: ``EREE_REQUIRE_LEDGER=1`` (``0`` does not lift a site file's
  ``true``: the stricter setting wins).

With ``require_ledger``, ``eree protect`` (and :func:`eree.release.protect.protect`)
refuses a secure release without ``--ledger`` before anything is read or written; seeded
releases (experiments, never published, never charged) stay allowed. The policy in force
and where it came from are recorded in the manifest (``policy``).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eree.errors import SpecError

__all__ = ["SITE_FILE", "SitePolicy", "site_policy"]

#: where the site file is looked for when ``EREE_SITE_CONFIG`` is not set
SITE_FILE = Path("/etc/eree/site.toml")
_ENV_FILE = "EREE_SITE_CONFIG"
_ENV_REQUIRE = "EREE_REQUIRE_LEDGER"
_KEYS = {"release": {"require_ledger"}}


@dataclass(frozen=True)
class SitePolicy:
    """The policy in force.

    Attributes:
        require_ledger: a publishable release must be charged to a ledger.
        source: where it was set (a file, the environment), or "" for none.
    """

    require_ledger: bool = False
    source: str = ""

    def describe(self) -> dict[str, Any]:
        """What the manifest records."""
        return {"require_ledger": self.require_ledger, "set_by": self.source or None}


def _from_file(path: Path) -> bool:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SpecError(
            f"site policy file {path}: cannot read it ({e.strerror or type(e).__name__})"
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SpecError(f"site policy file {path}: not valid TOML ({e})") from None
    for section, value in raw.items():
        if section not in _KEYS or not isinstance(value, dict):
            raise SpecError(f"site policy file {path}: unknown section [{section}]")
        for key in value:
            if key not in _KEYS[section]:
                raise SpecError(f"site policy file {path}: unknown key {section}.{key}")
    flag = raw.get("release", {}).get("require_ledger", False)
    if not isinstance(flag, bool):
        raise SpecError(f"site policy file {path}: release.require_ledger must be true or false")
    return flag


def site_policy() -> SitePolicy:
    """Read the policy from the site file and the environment (module docstring).

    Raises:
        SpecError: a named site file that is missing or invalid, or a bad value of
            ``EREE_REQUIRE_LEDGER``; the message names the file or variable.
    """
    named = os.environ.get(_ENV_FILE)
    path = Path(named) if named else SITE_FILE
    sources: list[str] = []
    require = False
    if named or path.is_file():
        if named and not path.is_file():
            raise SpecError(f"{_ENV_FILE}={named}: no such site policy file")
        if _from_file(path):
            require = True
            sources.append(str(path))
    env = os.environ.get(_ENV_REQUIRE)
    if env is not None:
        if env.strip() not in ("0", "1"):
            raise SpecError(f"{_ENV_REQUIRE} must be 0 or 1 (got {env!r})")
        if env.strip() == "1":
            require = True
            sources.append(_ENV_REQUIRE)
    return SitePolicy(require, ", ".join(sources))
