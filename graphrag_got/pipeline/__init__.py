"""The pipeline: the steps in order (`demo`, `build`) shared by the CLI commands."""
