"""The command line (main.py), one module per subcommand."""
from .main import command, main

__all__ = ["command", "main"]
