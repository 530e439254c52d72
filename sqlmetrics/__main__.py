"""`python -m sqlmetrics ...` is the `sqlmetrics` command."""
from .cli import command

command()
