"""`python -m sqlmetrics ...` is the `sqlmetrics` command."""
import sys

from .cli import main

sys.exit(main())
