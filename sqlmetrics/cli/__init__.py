"""The command line (main.py), one module per subcommand."""
from .main import main

__all__ = ["main"]
