"""``python -m precomet`` = the ``precomet`` command."""

import sys

from precomet.cli import main

sys.exit(main())
