"""One module per `gpu-platform` subcommand."""
