"""Hearth's indexing calls (a part of rag.service.Hearth): ingest, embed again with another model, read again,
and keep watched folders in sync. The service's own state (store, manifest, embedder, config) is Hearth's."""

from __future__ import annotations

import ctypes
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inference.errors import UsageError
from rag.ingest import IngestReport, Progress, forget, ingest
from rag.workspaces import DEFAULT_WORKSPACE, check_workspace

if TYPE_CHECKING:
    from inference.embedder import Embedder
    from rag.watch import WatchUpdate


def release_free_memory() -> bool:
    """Give the C heap's free pages back to the system (glibc); False where there is no way to.

    Indexing frees much of its memory in ONNX Runtime's and ChromaDB's threads, whose malloc arenas keep
    it otherwise: over 1,000 documents resident memory grew 39 MiB without this and 14 MiB with it
    (bench/memory.py), with no growth in live Python objects.
    """
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)
            return True
        except (OSError, AttributeError):  # not glibc (musl): nothing to give back this way
            pass
    return False


class Indexing:
    """The indexing calls of the service; mixed into rag.service.Hearth."""

    def ingest(
        self,
        paths: Iterable[Path],
        *,
        workspace: str = DEFAULT_WORKSPACE,
        progress: Callable[[Progress], None] | None = None,
        cancel: Callable[[], bool] | None = None,
        within: Sequence[Path] = (),
    ) -> IngestReport:
        """Index files and folders into a workspace (re-embedding all of it when the embedder changed).
        `within`: folders the files were found in (a watcher's), whose rule on links holds for them too."""
        workspace = check_workspace(workspace)
        t0 = time.perf_counter()
        embedder = self.embedder_for(workspace)  # loaded (and, the first time on a machine, prepared) here
        loading = time.perf_counter() - t0
        report = self._ingest_with(embedder, list(paths), workspace, progress, cancel, within)
        report.stages["model"] = loading
        return report

    def reembed(
        self,
        embedder: str,
        *,
        workspace: str = DEFAULT_WORKSPACE,
        progress: Callable[[Progress], None] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> IngestReport:
        """Embed every document of a workspace again with another embedding model (a name from
        `hearth embedder list`, or the built-in one's), which the workspace then searches with.

        Vectors of two models never mix: the workspace is emptied first and its files read again, so a run
        stopped half-way leaves the rest out of the library until they are added again.
        """
        workspace = check_workspace(workspace)
        chosen = self.embedder_named(embedder)
        forced = self.config.embedder
        if forced is not None and self.embedder_named(forced).name != chosen.name:
            raise UsageError(f"The embedding model is set to {forced!r} for every workspace, so {workspace!r} "
                             f"cannot switch to {embedder!r}.",
                             hint="Start Hearth without --embedder (or HEARTH_EMBEDDER) to choose per workspace.")
        if self.manifest.workspace_embedder(workspace) == chosen.name:
            raise UsageError(f"Workspace {workspace!r} is already embedded with {chosen.name!r}.")
        paths = self._unbind_for_reembedding(workspace, chosen)
        return self._ingest_with(chosen, paths, workspace, progress, cancel)

    def _ingest_with(self, embedder: Embedder, paths: list[Path], workspace: str,
                     progress: Callable[[Progress], None] | None,
                     cancel: Callable[[], bool] | None, within: Sequence[Path] = ()) -> IngestReport:
        bound = self.manifest.workspace_embedder(workspace)
        if bound is not None and bound != embedder.name:
            paths = self._unbind_for_reembedding(workspace, embedder) + paths
        self.check_index(workspace)
        self.keep_unkept_versions(workspace)  # documents indexed before versions were kept, changed since
        try:
            return self._repairing(lambda: ingest(
                paths,
                workspace=workspace,
                embedder=embedder,
                store=self.store,
                manifest=self.manifest,
                options=self.config.ingest,
                progress=progress,
                cancel=cancel,
                tables=self.tables,
                within=within,
                versions=self.versions,
            ))
        finally:  # the kept versions of documents no longer indexed (rescanned folders, unreadable files) go
            self.versions.prune(workspace, {r.source: r.sha256 for r in self.manifest.documents(workspace)})
            release_free_memory()

    def reindex(
        self,
        sources: Sequence[str],
        *,
        workspace: str = DEFAULT_WORKSPACE,
        progress: Callable[[Progress], None] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> IngestReport:
        """Drop indexed documents' passages and read them again; UsageError (nothing dropped) when one is gone."""
        workspace = check_workspace(workspace)
        missing = [s for s in sources if not Path(s).exists()]
        if missing:
            raise UsageError(f"{Path(missing[0]).name} no longer exists, so it cannot be read again.",
                             hint="Remove it from the library instead.")
        paths = [Path(s) for s in sources]
        self.forget(paths, workspace=workspace, keep_versions=True)
        return self.ingest(paths, workspace=workspace, progress=progress, cancel=cancel)

    def watch(
        self,
        folders: Iterable[Path],
        *,
        stop: threading.Event,
        on_update: Callable[[WatchUpdate], None],
        workspace: str = DEFAULT_WORKSPACE,
        progress: Callable[[Progress], None] | None = None,
        force_polling: bool | None = None,
        lock: AbstractContextManager[Any] | None = None,
    ) -> None:
        """Sync folders into a workspace, then keep them in sync until `stop` is set; `lock` (the window's)
        is held around each batch of index writes, so that they take turns with the caller's other writes."""
        from rag.watch import watch

        workspace = check_workspace(workspace)
        guard = lock if lock is not None else nullcontext()

        folders = list(folders)
        roots = [Path(f).resolve() for f in folders]

        def add(paths: list[Path]) -> IngestReport:
            with guard:  # the changed files are checked against their folder again when read (#65)
                return self.ingest(paths, workspace=workspace, progress=progress, within=roots)

        def remove(paths: list[Path]) -> list[str]:
            with guard:
                return self.forget(paths, workspace=workspace)

        watch(
            list(folders),
            ingest=add,
            forget=remove,
            on_update=on_update,
            stop=stop,
            include_hidden=self.config.ingest.include_hidden,
            force_polling=force_polling,
        )

    def _unbind_for_reembedding(self, workspace: str, embedder: Embedder) -> list[Path]:
        """Empty a workspace indexed with another model and bind it to `embedder`; return its files to redo.

        Vectors of two models are never mixed: every document is removed first, then indexed again.
        """
        sources = [r.source for r in self.manifest.documents(workspace)]
        forget([Path(s) for s in sources], workspace=workspace, store=self.store, manifest=self.manifest)
        # The collection itself remembers the old vector size (and may hold chunks of interrupted files).
        self.store.drop_workspace(workspace)
        self.manifest.rebind_workspace(workspace, embedder=embedder.name, dim=embedder.dim)
        return [Path(s) for s in sources]
