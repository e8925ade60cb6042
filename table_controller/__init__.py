"""Casino War table controller: the game, the runner, storage, publishing and the CLI."""

__version__ = "0.1.0"
