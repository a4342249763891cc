"""`python -m mineamongus`: the `mineamongus` command."""

import sys

from controller.cli import main

sys.exit(main())
