"""`python -m ragstream.app.cli`: the same command as the `ragstream` console script."""

import sys

from ragstream.app.cli import main

sys.exit(main())
