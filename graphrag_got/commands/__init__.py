"""CLI areas: one module per subcommand group, each exposing ``register(subparsers)`` and ``run(args, settings)``."""
