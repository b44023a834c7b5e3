"""`python -m farm.sim`: serve virtual phones in the foreground (what `farm sim up` runs)."""

import sys

from farm.sim.serve import serve

sys.exit(serve())
