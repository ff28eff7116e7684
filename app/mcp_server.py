"""Hearth as an MCP server over stdio: agents search, ask and list the office's documents as tools.

Tools (official `mcp` SDK, stdio transport):
    search_documents(query, k=5)   the passages that best match a query, with their sources
    ask(question)                  an answer grounded in the documents, with the passages it used
    compare_documents(old, new=None, previous=False, version=None)
                                   what changed between two indexed documents, or a document and its earlier
                                   version: every change (added, removed, changed, moved) with both sides cited
    list_sources()                 every indexed document of the workspace

The SDK runs each call on a worker thread; one lock keeps them one at a time, as the models are single
stateful resources. Nothing may be written to stdout but the protocol, so all logging goes to stderr.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from inference.errors import HearthError
from rag.answer import NOT_FOUND_MODES
from rag.service import DEFAULT_WORKSPACE, Hearth, check_workspace

INSTRUCTIONS = (
    "Hearth answers from an office's private documents, on this machine. Use search_documents to find "
    "passages (each with its source file, page and heading), ask for a short answer grounded in them with "
    "citations, compare_documents to see what changed between two documents or versions, and list_sources to "
    "see which documents are indexed."
)


def build_mcp(hearth: Hearth, *, workspace: str = DEFAULT_WORKSPACE) -> Any:
    """An MCP server whose tools answer from `workspace` through `hearth`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    workspace = check_workspace(workspace)
    server = MCPServer("hearth", instructions=INSTRUCTIONS, log_level="WARNING")
    # Every tool only reads the index: nothing is changed, deleted or fetched from outside the machine.
    read_only = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
    lock = threading.Lock()

    def run(fn: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            try:
                return fn(*args, **kwargs)
            except HearthError as exc:  # the sentence a user reads, as the tool's error
                raise ToolError(f"{exc} {exc.hint}" if exc.hint else str(exc)) from exc

    @server.tool(annotations=read_only)
    def search_documents(query: str, k: int = 5, documents: list[str] | None = None) -> dict[str, Any]:
        """Find the k passages of the office's documents that best match a query (k from 1 to 20), only in
        `documents` (indexed files or folders, as list_sources names them) when given.

        Returns the passages best first, each with its source file, page, heading, score and text.
        """
        if not 1 <= k <= 20:
            raise ToolError("k must be between 1 and 20.")
        hits = run(hearth.search, query, k=k, workspace=workspace, scope=documents or ())
        return {"workspace": workspace, "passages": [h.to_json() for h in hits]}

    @server.tool(annotations=read_only)
    def ask(question: str, documents: list[str] | None = None, not_found: str | None = None) -> dict[str, Any]:
        """Answer a question from the office's documents with a local model, only from `documents` (indexed
        files or folders, as list_sources names them) when given. `not_found`: "strict", "balanced" (the
        default) or "off": how readily Hearth says the documents do not answer instead of showing the reply.

        Returns the answer, which cites passages as [1], [2]..., the numbered passages it was given
        (source file, page, heading, text, and whether the answer cites it), and supporting quotes: the
        documents' own sentences that bear the answer out, with their places; `abstained` and `why` when the
        documents do not seem to answer.
        """
        if not_found is not None and not_found not in NOT_FOUND_MODES:
            raise ToolError("not_found must be one of: " + ", ".join(NOT_FOUND_MODES) + ".")
        result = run(hearth.ask, question, workspace=workspace, scope=documents or (), not_found=not_found)
        out = result.to_json()
        # With the supporting quotes (the documents' own words, with their places) and, when the model's
        # reply gave way to them, its own words in "reply".
        extra = {k: out[k] for k in ("quotes", "fallback", "abstained", "why", "reply", "searched_for", "table",
                                     "comparison") if k in out}
        return {"workspace": workspace, "answer": out["answer"], "sources": out["sources"], **extra}

    @server.tool(annotations=read_only)
    def summarize_document(document: str) -> dict[str, Any]:
        """Summarise one whole indexed document (as list_sources names it), section by section with a local
        model: an overview, then each section's summary with its heading and page."""
        summary = run(hearth.summarize, document, workspace=workspace)
        return {"workspace": workspace, **summary.to_json()}

    @server.tool(annotations=read_only)
    def compare_documents(old: str, new: str | None = None, previous: bool = False,
                          version: int | None = None) -> dict[str, Any]:
        """What changed between two indexed documents (`old`, `new`, as list_sources names them), or with
        previous=true between `old`'s earlier version (`version`, else the one before) and its version indexed
        now. Computed from their text, no model: every change (added, removed, changed, moved) with its heading
        and the old and new text and page, and a summary."""
        result = run(hearth.compare, old, new, previous=previous, version=version, workspace=workspace)
        return {"workspace": workspace, **result.to_json()}

    @server.tool(annotations=read_only)
    def list_sources() -> dict[str, Any]:
        """List the documents indexed in the workspace, with their number of passages and pages."""
        docs = run(hearth.sources, workspace=workspace)
        return {"workspace": workspace, "sources": [
            {"source": d.source, "status": d.status, "chunks": d.chunks, "pages": d.pages, "indexed": d.updated}
            for d in docs
        ]}

    return server


def mcp_command(hearth: Hearth, args: Any) -> int:
    """`hearth mcp`: serve the tools over stdin/stdout until the client closes them.

    Refused (PolicyError) where the administrator's policy forbids the API server (`api.server =
    "forbidden"`): MCP hands the same documents to other programs.
    """
    from app.policy import API_FORBIDDEN, PolicyError, load_policy

    policy = getattr(args, "policy", None) or load_policy()
    if policy.api_server == API_FORBIDDEN:
        raise PolicyError("The administrator's policy does not allow serving Hearth's documents to other programs "
                          "on this machine (api.server = \"forbidden\"), so `hearth mcp` cannot run.",
                          hint=f"Policy: {policy.source}.")
    server = build_mcp(hearth, workspace=args.workspace)
    print(f"Hearth MCP server on stdio (workspace {args.workspace!r}).", file=sys.stderr)
    server.run("stdio")
    return 0
