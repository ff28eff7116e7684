"""The errors of documents and of the document index; they are HearthErrors (inference.errors) like the rest.

    HearthError
    ├── LoadError          one document could not be read (the batch goes on)
    ├── CompareError       two documents cannot be compared (they share no sections)
    └── StoreError         the vector store cannot be opened or written
        └── IndexDamaged   its files can no longer be read (rebuilt from the keyword index)
"""

from __future__ import annotations

from inference.errors import HearthError


class LoadError(HearthError):
    """One document could not be read; `kind` names why (corrupt, encrypted, empty, ...)."""

    def __init__(self, message: str, *, kind: str = "corrupt", hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.kind = kind


class StoreError(HearthError):
    """The vector store cannot be opened, read or written."""


class IndexDamaged(StoreError):
    """The local vector index cannot be read any more (a forced stop mid-write); it can be rebuilt."""


class CompareError(HearthError):
    """Two documents cannot be compared meaningfully (they share no sections)."""
