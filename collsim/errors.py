"""Errors that users can cause: the CLI prints them as one line and exits 2."""


class CollsimError(ValueError):
    """Bad input (an argument, a file, a schedule) described in one line."""
