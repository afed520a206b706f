"""tpulint: finds the lines of PyTorch code that will be slow or broken on Google TPUs.

The package carries the ``tpulint`` executable (installed into the environment's scripts
directory by the wheel) and ``python -m tpulint``, which runs it; ``find_tpulint_bin()`` tells
tools where it is.
"""

from tpulint._find_tpulint import find_tpulint_bin

__all__ = ["find_tpulint_bin"]
