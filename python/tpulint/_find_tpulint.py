"""Finds the ``tpulint`` executable that the wheel installed next to this package."""

from __future__ import annotations

import os
import sysconfig


def _candidate_directories() -> list[str]:
    """Scripts directories where an installation may have put the binary, most likely first."""
    directories = [sysconfig.get_path("scripts")]
    # `pip install --user`: the user scheme's scripts directory.
    user_scheme = _user_scheme()
    if user_scheme:
        directories.append(sysconfig.get_path("scripts", scheme=user_scheme))
    # `pip install --target DIR` puts the package in DIR and the scripts in DIR/bin.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    directories.append(os.path.join(package_root, "bin"))
    return directories


def _user_scheme() -> str | None:
    if hasattr(sysconfig, "get_preferred_scheme"):  # Python 3.10+
        return sysconfig.get_preferred_scheme("user")
    scheme = "nt_user" if os.name == "nt" else "posix_user"
    return scheme if scheme in sysconfig.get_scheme_names() else None


def find_tpulint_bin() -> str:
    """The absolute path of the installed ``tpulint`` executable.

    Raises ``FileNotFoundError`` naming every place looked at when there is none.
    """
    name = "tpulint" + (sysconfig.get_config_var("EXE") or "")
    looked_at = []
    for directory in _candidate_directories():
        candidate = os.path.join(directory, name)
        looked_at.append(candidate)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(
        "the tpulint executable is not installed next to the tpulint package (looked at "
        + ", ".join(looked_at)
        + "); reinstall it with `pip install --force-reinstall tpulint`"
    )
