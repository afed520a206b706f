"""``python -m tpulint ARGS``: runs the installed ``tpulint`` executable with ARGS."""

from __future__ import annotations

import os
import subprocess
import sys

from tpulint._find_tpulint import find_tpulint_bin


def main() -> int:
    try:
        binary = find_tpulint_bin()
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    arguments = [binary, *sys.argv[1:]]
    if sys.platform == "win32":
        # Windows has no exec: run it as a child and pass its exit status on.
        try:
            return subprocess.run(arguments).returncode
        except KeyboardInterrupt:
            return 130
    os.execv(binary, arguments)
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main())
