"""`python -m parallelgraph` is the `parallelgraph` command."""

import sys

from .cli import main

sys.exit(main())
