"""`python -m palui.cli`: the same command line as the installed `palui` script."""

import sys

from palui.cli.main import main

sys.exit(main())
