"""Hearth's exception tree; every third-party error is translated into one of these where it enters.

    HearthError            str() is the sentence a user reads; .hint says what to do about it
    ├── ModelError         a model file is missing, corrupt, or fails to load or run
    ├── EmbedderError      the embedding runtime cannot start or run
    ├── (rag.errors)       the errors of documents and the index: LoadError, StoreError, IndexDamaged
    ├── UsageError         the caller asked for something impossible (bad workspace name, bad k)
    │   └── DataDirInUse   another process has the data folder open
    └── Cancelled          the user stopped the work; shown as no dialog
"""

from __future__ import annotations


class HearthError(Exception):
    """An error whose message is fit to show a user, with an optional hint."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        return self.args[0] if self.args else self.__class__.__name__


class ModelError(HearthError):
    """A model file is missing, corrupt, or cannot be loaded or run."""


class EmbedderError(HearthError):
    """The embedding runtime cannot start or run."""


class UsageError(HearthError):
    """The request itself is invalid (a bad name, a bad number)."""


class DataDirInUse(UsageError):
    """Another Hearth process is using the data folder; its message names that process."""


class Cancelled(HearthError):
    """The user stopped the work; callers show no error for it."""

    def __init__(self, message: str = "Cancelled.") -> None:
        super().__init__(message)
