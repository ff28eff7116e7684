"""`python -m app`: the same as the `hearth` command."""

import sys

from app.cli import main

sys.exit(main())
