import sys

from frozen_sweep.collect.cli import main

sys.exit(main())
