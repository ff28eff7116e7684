"""The question half of the service: search, ask and summarize, with scope and follow-ups.

`Hearth` (rag/service.py) derives from `Questions`; these methods use the parts it owns (the index, the
embedders, the chat model, the conversations) through the attributes declared below.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inference.chat import ChatModel, ChatModelDefaults
from inference.errors import UsageError
from rag.answer import Answer, Turn, answer, check_not_found
from rag.confirm import AnswerCheck
from rag.crosslingual import fuse_rankings, search_across_languages
from rag.followups import Earlier, names_in, rewritten, standalone_query
from rag.likely import QuestionLikelihood
from rag.quotes import align, question_verdict
from rag.retrieval import retrieve
from rag.ruler import measuring
from rag.store import DocumentIndex, Hit
from rag.summary import Summary, SummaryProgress, summarize
from rag.table_questions import answer_from_tables
from rag.table_result import TableResult, statement, table_hit
from rag.workspaces import DEFAULT_WORKSPACE, check_workspace

if TYPE_CHECKING:
    import numpy as np

    from inference.embedder import Embedder
    from rag.config import HearthConfig
    from rag.conversations import ConversationStore
    from rag.manifest import Manifest
    from rag.retrieval import Reranker
    from rag.table_store import TableStore

# "Summarize X", "give me a summary of X", "what is X about?" — X a document of the workspace.
_SUMMARY = re.compile(r"^\s*(?:please\s+)?(?:summari[sz]e|sum up|(?:give|write) (?:me )?(?:a |an )?(?:short |brief )?"
                      r"(?:summary|overview) of|(?:a |an )?(?:short |brief )?(?:summary|overview) of)\s+(?P<rest>.+)$|"
                      r"^\s*what(?:'s| is)\s+(?P<rest2>.+?)\s+about\s*\??\s*$", re.IGNORECASE)
# "What does X say about …", "according to X, …", "in X, …" — the question, asked of X alone.
_ABOUT_DOCUMENT = re.compile(r"\b(?:what does|what do|does|do)\s+(?P<doc>.+?)\s+(?:say|state|tell|rule|mention)\b|"
                             r"\baccording to\s+(?P<doc2>[^,?]+)|^\s*in\s+(?P<doc3>[^,?]+),", re.IGNORECASE)
log = logging.getLogger(__name__)
AMBIGUOUS_WITHIN = 0.8  # passages of other documents this close to the best one make a question ambiguous
SCOPED_CANDIDATES = 400  # candidates per ranking when a question is limited to chosen documents


class Questions:
    """Search, ask and summarize over the parts of a `Hearth`."""

    config: HearthConfig
    store: DocumentIndex
    manifest: Manifest
    conversations: ConversationStore
    tables: TableStore
    chat_model: ChatModel
    reranker: Reranker | None
    embedder_for: Callable[[str], Embedder]
    embedder_named: Callable[[str | None], Embedder]
    embedder_given: bool  # an embedder was handed to Hearth: it measures replies too
    _done_sources: Callable[[str], set[str]]
    _check_embedder: Callable[[str], Embedder]
    _check_chat_model: Callable[[], None]
    answer_check: Callable[[Callable[[], bool] | None], AnswerCheck]
    _repairing: Callable[[Callable[[], Any]], Any]

    def search(self, query: str, *, k: int = 5, workspace: str = DEFAULT_WORKSPACE, mode: str | None = None,
               scope: Sequence[Path | str] = (), lines: bool | None = None, likely: bool = False,
               cancel: Callable[[], bool] | None = None) -> list[Hit]:
        """The k passages most similar to a query, best first, from fully indexed documents only — and only
        those under `scope` (indexed files or folders) when it names any. With `lines` (by default as the
        configuration's `retrieval.search_lines` says, on unless changed), as `ask` searches: passages whose
        best line is closest to the query move up (rag.retrieval.RetrievalOptions); with `likely` too, the
        first ones are ordered again by how likely the chat model finds the query after each (rag/likely.py:
        loads the chat model, and reads each of them; `cancel` stops it)."""
        workspace = check_workspace(workspace)
        if not query.strip():
            raise UsageError("The question is empty.")
        if not 1 <= k <= 100:
            raise UsageError(f"k must be between 1 and 100, not {k}.")
        if lines is None:
            lines = self.config.retrieval.search_lines
        return self._repairing(lambda: self._search(query, k=k, workspace=workspace, mode=mode, scope=scope,
                                                    lines=lines, likely=likely, cancel=cancel))

    def in_scope(self, scope: Sequence[Path | str], *, workspace: str = DEFAULT_WORKSPACE) -> set[str]:
        """The indexed documents that `scope`'s files and folders name; UsageError for one that names none."""
        workspace = check_workspace(workspace)
        known = self._done_sources(workspace)
        chosen: set[str] = set()
        for item in scope:
            matched = {s for s in known if any(_under(s, form) for form in _forms(item))}
            if not matched:
                raise UsageError(f"{item} is not an indexed document or folder of workspace {workspace!r}.",
                                 hint="See `hearth sources`, or index it first with `hearth ingest`.")
            chosen |= matched
        return chosen

    def _search(self, query: str, *, k: int, workspace: str, mode: str | None,
                scope: Sequence[Path | str] = (), lines: bool = False, likely: bool = False,
                cancel: Callable[[], bool] | None = None) -> list[Hit]:
        done = self._done_sources(workspace)
        if not done:
            return []
        options = replace(self.config.retrieval, mode=mode or self.config.retrieval.mode)
        if scope:
            done = self.in_scope(scope, workspace=workspace)
            options = replace(options, candidates=max(options.candidates, SCOPED_CANDIDATES))
        embedder = _QueryEmbedder(self._check_embedder(workspace))
        self.store.sync_lexical(workspace, self._done_sources(workspace))
        # Only chunks of documents whose indexing finished (and are in scope) count.
        return retrieve(
            query, workspace=workspace, embedder=embedder, store=self.store, done=done, k=k, options=options,
            reranker=self.reranker if options.mode == "hybrid" else None, lines=lines,
            likely=QuestionLikelihood(lambda: self.chat_model, cancel=cancel, floor=self.config.min_score)
            if lines and likely and self.config.model_ranking else None,
        )

    def searched_for(self, question: str, *, history: Sequence[str] = (), conversation: int | None = None,
                     workspace: str = DEFAULT_WORKSPACE) -> str:
        """What `ask` would search for `question`: the question, or a follow-up made standalone from the
        conversation (its stored turns, or the earlier user questions in `history`)."""
        workspace = check_workspace(workspace)
        if conversation is not None:
            earlier = [_earlier(t) for t in self.conversations.require(conversation, workspace).turns]
        else:
            earlier = [Earlier(q) for q in history]
        return self.standalone(question, earlier, workspace=workspace)

    def subject_document(self, question: str, query: str, *, workspace: str = DEFAULT_WORKSPACE) -> str | None:
        """For a follow-up made standalone, the document its subject names ("Heron": project-heron.md), if one
        does: it is asked of that document alone, since similar documents' passages would mislead the answer."""
        if not rewritten(question, query):
            return None
        return _document_of_subject(names_in(query), self._done_sources(check_workspace(workspace)))

    def standalone(self, question: str, earlier: Sequence[Earlier], *, workspace: str = DEFAULT_WORKSPACE) -> str:
        """The query to search for a question after the turns `earlier` (see rag/followups.py); a short
        question naming nothing counts as a follow-up when the documents cannot tell what it is about."""
        return standalone_query(question, earlier, alike=lambda q: self._alike(q, workspace))

    def _alike(self, question: str, workspace: str) -> set[str]:
        """The documents whose passages answer a question about equally well: similarity within 20 % of the
        best passage's, among the top five (by the passages alone: what made the follow-ups' measures)."""
        hits = self.search(question, k=5, workspace=workspace, lines=False)
        if not hits:
            return set()
        top = max(h.score for h in hits)
        return {h.source for h in hits if h.score >= AMBIGUOUS_WITHIN * top}

    def ask(
        self,
        question: str,
        *,
        k: int = 5,
        workspace: str = DEFAULT_WORKSPACE,
        on_token: Callable[[str], None] | None = None,
        cancel: Callable[[], bool] | None = None,
        history: Sequence[str] = (),
        turns: Sequence[Turn] = (),
        conversation: int | None = None,
        scope: Sequence[Path | str] = (),
        query: str | None = None,
        progress: Callable[[SummaryProgress], None] | None = None,
        not_found: str | None = None,
    ) -> Answer:
        """Answer a question from the workspace's documents, streaming the reply to `on_token`.

        `history` holds the conversation's earlier user questions and `turns` the earlier questions with
        their answers (which the model sees, trimmed to fit). With `conversation` (an id from
        `new_conversation`), both come from the stored conversation and the question and its answer are
        added to it. A follow-up is searched as a standalone query (`Answer.searched_for`); `query` searches
        that instead (the user corrected it). `scope` limits the answer to those indexed files or folders.
        "Summarize X" with X a document of the workspace is answered by `summarize`; "what does X say about
        …" is asked of X alone; `progress` hears how far such a summary is. "What changed in X?" and "compare
        X and Y" are answered from the computed comparison (rag/comparisons.py). `not_found` (NOT_FOUND_MODES,
        default the configuration's) is how readily a reply the passages do not bear out is withheld.
        """
        t0 = time.perf_counter()
        workspace = check_workspace(workspace)
        not_found = check_not_found(not_found or self.config.not_found)
        self._check_chat_model()  # a bad --model is an error even with no hits
        conv = self.conversations.require(conversation, workspace) if conversation is not None else None
        if conv is not None:
            turns = conv.history()
        if turns and not history:
            history = [t.question for t in turns]
        comparison = self.comparison_asked(question, workspace=workspace) if not scope and query is None else None
        if comparison is not None:  # "what changed in X?", "compare X and Y": Hearth's own list of changes
            return self._comparison_answer(question, comparison, conv, on_token=on_token, cancel=cancel)
        named = self._named_document(question, workspace) if not scope and query is None else None
        if named is not None and named[1] == "summary":
            return self._summary_answer(question, named[0], workspace, conv, on_token=on_token, cancel=cancel,
                                        progress=progress)
        if named is not None:
            scope = [named[0]]
        if query is None or not query.strip():
            query = self.searched_for(question, history=history, conversation=conv.id if conv else None,
                                      workspace=workspace)
            subject = None if scope else self.subject_document(question, query, workspace=workspace)
            scope = [subject] if subject is not None else scope
        try:
            computed = self.table_answer(question, workspace=workspace, scope=scope, query=query)
        except UsageError:
            raise
        except Exception:  # a table that cannot be read or matched must not cost the answer: search instead
            log.exception("Answering from a table failed; the question is searched instead")
            computed = None
        if computed is not None:
            return self._table_reply(question, query, computed, conv, on_token=on_token, t0=t0)
        found, hits, asked, check = self._answer_passages(question, query, k=k, workspace=workspace, scope=scope,
                                                          cancel=cancel)
        return self._reply_from(question, asked, found, hits, check, conv, turns=turns, on_token=on_token,
                                cancel=cancel, not_found=not_found, workspace=workspace, t0=t0)

    def _answer_passages(self, question: str, query: str, *, k: int, workspace: str, scope: Sequence[Path | str],
                         cancel: Callable[[], bool] | None) -> tuple[Any, list[Hit], str, AnswerCheck]:
        """The passages a question is answered from: the search's result (in the documents' languages too), what
        the model and the aligner are asked, and the answer's check (which keeps what its lines were read as)."""
        # A question about documents in another language is searched in theirs too (rag/crosslingual.py).
        # Passages' best lines, and how likely the model finds the question after each, weigh for a question
        # searched as asked; not for a follow-up made standalone, whose subject's name, joined on, would favour
        # the lines that name it over the section that answers.
        lines = not rewritten(question, query)
        searched: list[list[Hit]] = []  # each search's passages, those under the score floor too

        def relevant(q: str) -> list[Hit]:
            searched.append(self.search(q, k=k, workspace=workspace, scope=scope, lines=lines, likely=lines,
                                        cancel=cancel))
            return [h for h in searched[-1] if h.score >= self.config.min_score]

        found = search_across_languages(
            query, search=relevant,
            passages=lambda: self.store.languages(workspace) if self.config.translate_queries else {},
            model=lambda: self.chat_model, k=k, cancel=cancel)
        # A follow-up made standalone is what the model and the quote aligner are asked, so that "it" cannot
        # be taken for another document's subject among the passages.
        asked = query if rewritten(question, query) else question
        check = self.answer_check(cancel)  # one check for the question: what its lines were read as is kept
        hits = found.hits or self._under_floor(asked, fuse_rankings(searched, k), workspace, check)
        return found, hits, asked, check

    def _reply_from(self, question: str, asked: str, found: Any, hits: list[Hit], check: AnswerCheck, conv: Any, *,
                    turns: Sequence[Turn], on_token: Callable[[str], None] | None,
                    cancel: Callable[[], bool] | None, not_found: str, workspace: str, t0: float) -> Answer:
        """The model's reply from `hits`, streamed, aligned with them and weighed by the grounding policy, and
        added to the conversation `conv` (with what the user saw when it fails)."""
        t_search = time.perf_counter() - t0
        model = self.chat_model if hits else _NoModel()
        shown: list[str] = []

        def show(piece: str) -> None:
            shown.append(piece)
            if on_token is not None:
                on_token(piece)

        try:
            result = answer(asked, hits, model, history=turns, on_token=show, cancel=cancel,
                            max_passage_tokens=self.config.max_passage_tokens)
        except Exception as exc:
            if conv is not None:  # keep what the user saw, and why it ended
                self.conversations.add_turn(conv.id, question, None, text="".join(shown), error=str(exc),
                                            searched_for=found.query)
            raise
        result.timings["retrieval"] = t_search
        result = replace(result, searched_for=found.query)
        if hits:
            # Align against the passages as stored (the prompt's copies are tidied; offsets point at these).
            stored = {h.chunk_id: h for h in hits}
            given = [stored.get(h.chunk_id, h) for h in result.sources]
            t_align = time.perf_counter()
            ruler, given = self._measuring(workspace, asked, given)
            support = align(result.text, asked, given, embedder=ruler, rarity=self.store.rarity(asked), check=check,
                            not_found=not_found)
            result = replace(result, support=support)
            result.timings["quotes"] = time.perf_counter() - t_align
        if conv is not None:
            self.conversations.add_turn(conv.id, question, result)
            result = replace(result, conversation_id=conv.id)
        return result

    def _under_floor(self, question: str, hits: Sequence[Hit], workspace: str, check: AnswerCheck) -> list[Hit]:
        """Where no passage cleared the search's score floor, the best ones all the same when the larger model's
        probe reads their lines closest to the question as answering it, as surely as it must to let those lines
        stand in for a reply (rag.confirm.CheckBounds.answered); none otherwise, nor without the probe. A question
        in words of its own can score under the floor against the one long note that answers it (README "Under
        the search's floor"). The answer's check is `check`'s too, which keeps the verdict for the same lines."""
        if not hits or not check.bounds.asks_question():
            return []
        ruler, measured = self._measuring(workspace, question, hits)
        verdict = question_verdict(question, measured, embedder=ruler, rarity=self.store.rarity(question),
                                   check=check)
        return list(hits) if check.bounds.answered(verdict) else []

    def _measuring(self, workspace: str, question: str, hits: Sequence[Hit]) -> tuple[Embedder, list[Hit]]:
        """The embedder that measures a reply against `hits`, and the hits as it scores them (rag/ruler.py): the
        default one where the workspace searches with another, unless an embedder was handed to Hearth."""
        searched_with = self.embedder_for(workspace)
        if self.embedder_given:
            return searched_with, list(hits)
        return measuring(searched_with, lambda: self.embedder_named(None), question, hits)

    def table_answer(self, question: str, *, workspace: str = DEFAULT_WORKSPACE, scope: Sequence[Path | str] = (),
                     query: str | None = None) -> TableResult | None:
        """The answer computed over a table of the workspace (or of `scope`) when the question counts, sums,
        averages, finds an extreme or lists rows of one (rag/table_questions.py); None otherwise. `query`, a
        follow-up made standalone, is tried after the question."""
        workspace = check_workspace(workspace)
        done = self.in_scope(scope, workspace=workspace) if scope else self._done_sources(workspace)
        current = {r.source: r.sha256 for r in self.manifest.documents(workspace, status="done") if r.source in done}
        tables = self.tables.tables(workspace, current) if current else []
        if not tables:
            return None
        for text in dict.fromkeys(q for q in (question, query) if q):
            result = answer_from_tables(text, tables)
            if result is not None:
                return result
        return None

    def _table_reply(self, question: str, query: str, computed: TableResult, conv: Any, *,
                     on_token: Callable[[str], None] | None, t0: float) -> Answer:
        """An answer whose figures a table computed: Hearth's own statement, citing the rows it used."""
        text = statement(computed)
        if on_token is not None:
            on_token(text)
        out = Answer(text, [table_hit(computed)], [1], {"table": time.perf_counter() - t0}, searched_for=query,
                     table=computed)
        if conv is not None:
            self.conversations.add_turn(conv.id, question, out)
            out = replace(out, conversation_id=conv.id)
        return out

    def summarize(
        self,
        path: Path | str,
        *,
        workspace: str = DEFAULT_WORKSPACE,
        progress: Callable[[SummaryProgress], None] | None = None,
        cancel: Callable[[], bool] | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> Summary:
        """A summary of a whole indexed document, section by section (each part citing its section and page)."""
        workspace = check_workspace(workspace)
        chosen = [s for s in self.in_scope([path], workspace=workspace) if s in _forms(path)]
        if len(chosen) != 1:
            raise UsageError(f"{path} is a folder; summarize takes one document.",
                             hint="Give the path of one indexed file (see `hearth sources`).")
        source = chosen[0]
        self._check_chat_model()
        self.store.sync_lexical(workspace, self._done_sources(workspace))
        rows = [r for r in self.store.keyword_rows(workspace) if r.source == source]
        if not rows:
            raise UsageError(f"{Path(source).name} has no text to summarize.")
        return summarize(source, rows, self.chat_model, progress=progress, cancel=cancel, on_token=on_token)

    def _summary_answer(self, question: str, source: str, workspace: str, conv: Any, *,
                        on_token: Callable[[str], None] | None, cancel: Callable[[], bool] | None,
                        progress: Callable[[SummaryProgress], None] | None) -> Answer:
        """A chat question asking for a document's summary, answered as one (stored like any answer)."""
        t0 = time.perf_counter()
        result = self.summarize(source, workspace=workspace, on_token=on_token, cancel=cancel, progress=progress)
        sources = result.sources
        out = Answer(result.summary, sources, list(range(1, len(sources) + 1)),
                     {"total": time.perf_counter() - t0}, searched_for=f"summary of {Path(source).name}")
        if conv is not None:
            self.conversations.add_turn(conv.id, question, out)
            out = replace(out, conversation_id=conv.id)
        return out

    def _named_document(self, question: str, workspace: str) -> tuple[str, str] | None:
        """(document, "summary" | "about") when the question asks for a workspace document's summary or
        asks what that document says; None otherwise."""
        m = _SUMMARY.match(question)
        about = _ABOUT_DOCUMENT.search(question) if m is None else None
        if m is None and about is None:
            return None
        text = (m.group("rest") or m.group("rest2")) if m is not None else next(g for g in about.groups() if g)
        source = _document_named(text, self._done_sources(workspace))
        if source is None:
            return None
        return source, "summary" if m is not None else "about"


def _document_named(text: str, sources: set[str]) -> str | None:
    """The one document whose file name (with or without extension) the text names; None if none or several."""
    wanted = _words(text)
    found = [s for s in sources if _words(Path(s).stem) and _contains(wanted, _words(Path(s).stem))]
    if len(found) > 1:  # prefer the longest name ("policy-2024" over "policy")
        best = max(len(_words(Path(s).stem)) for s in found)
        found = [s for s in found if len(_words(Path(s).stem)) == best]
    return found[0] if len(found) == 1 else None


def _document_of_subject(names: Sequence[str], sources: set[str]) -> str | None:
    """The one document whose file name holds every word of a subject's names ("Heron": project-heron.md)."""
    wanted = set(_words(" ".join(names)))
    if not wanted:
        return None
    found = [s for s in sources if wanted <= set(_words(Path(s).stem))]
    return found[0] if len(found) == 1 else None


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^\w]+", text.lower()) if w]


def _contains(words: list[str], name: list[str]) -> bool:
    n = len(name)
    return any(words[i: i + n] == name for i in range(len(words) - n + 1))


def _forms(item: Path | str) -> list[str]:
    """The ways an indexed source may spell a path: as given (absolute) and with its links resolved."""
    path = Path(item).expanduser()
    forms = {os.path.abspath(path)}
    try:
        forms.add(str(path.resolve()))
    except OSError:
        pass
    return [f.rstrip(os.sep) or os.sep for f in forms]


def _under(source: str, form: str) -> bool:
    return source == form or source.startswith(form + os.sep)


def _earlier(turn: Any) -> Earlier:
    """What a stored turn was about: its question, what was searched, the documents its answer drew on."""
    documents: list[str] = []
    if turn.answer is not None:
        hits = turn.answer.cited_sources or turn.answer.sources
        documents = list(dict.fromkeys(h.source for h in hits))
    return Earlier(turn.question, turn.searched_for, tuple(documents))


class _QueryEmbedder:
    """Presents an embedder's query side (`embed_query`: e5's "query: " prompt) as `embed` to retrieval."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self.passages = embedder  # the passage side, for what retrieval embeds of passages (their lines)
        self.name, self.dim, self.max_tokens = embedder.name, embedder.dim, embedder.max_tokens

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from inference.embedder import query_vectors

        return query_vectors(self._embedder, texts)

    def count_tokens(self, text: str) -> int:
        return self._embedder.count_tokens(text)


class _NoModel(ChatModelDefaults):
    """Stands in for the chat model when there is nothing to answer from, so none is loaded."""

    name = "none"
    n_ctx = 0

    def stream(self, *args: object, **kwargs: object):  # pragma: no cover - never called without hits
        raise AssertionError("no model needed")

    def count_tokens(self, text: str) -> int:  # pragma: no cover
        return 0
