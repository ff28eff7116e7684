"""Conversations: asking (the answer streams into its card; limited to chosen documents while the scope
chip shows them; again with a corrected search), summarizing a document into the chat, stopping, and the
stored chats of the workspace (open, delete, export)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog

from app.gui.chat import TurnCard
from app.gui.controllers.base import Controller
from app.gui.operations import ConversationStarted, Token
from app.gui.worker import Failure, Job
from rag.conversations import Conversation, Turn
from rag.summary import SummaryProgress


class ConversationController(Controller):
    """The conversation shown (`conversation`) and the answer being written (`ask_job`)."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.conversation: Conversation | None = None
        self.ask_job: Job | None = None
        self._live: tuple[Turn, TurnCard | None] | None = None  # the turn being answered, and its card if shown

    @property
    def chat(self):
        """The chat view."""
        return self.window.chat

    def reset(self) -> None:
        """Show no conversation (another workspace, or this one emptied)."""
        self.conversation = None
        self._detach_live_card()
        self.chat.show_conversation(None)

    def new_chat(self) -> None:
        """Start an empty conversation (stored once its first question is asked)."""
        self._detach_live_card()
        self.conversation = None
        self.chat.show_conversation(None)
        self.chat.set_generating(self.ask_job is not None)
        self.window.sidebar.clear_chat_selection()
        self.refresh_list()
        self.chat.prompt.setFocus()

    def open(self, conv_id: int) -> None:
        """Reopen a stored conversation."""
        if self._live is not None and self.conversation is not None and self.conversation.id == conv_id:
            return  # the one being answered is on screen already
        job = self.ops.get_conversation(conv_id)
        job.finished.connect(self._show)
        job.failed.connect(self.show_failure)

    def _show(self, conv: Conversation | None) -> None:
        if conv is None or conv.workspace != self.workspace:
            self.refresh_list()
            return
        self._detach_live_card()
        self.conversation = conv
        self.chat.show_conversation(conv)
        self.chat.set_generating(self.ask_job is not None)

    def delete(self, conv_id: int) -> None:
        """Delete a stored conversation."""
        if self.conversation is not None and self.conversation.id == conv_id:
            if self.ask_job is not None:
                self.ask_job.cancel()
            self.new_chat()
        job = self.ops.delete_conversation(conv_id)
        job.ended.connect(self.refresh_list)
        job.failed.connect(self.show_failure)

    def export_current(self) -> Job | None:
        """Save the conversation shown as Markdown (asking where)."""
        if self.conversation is not None and self.conversation.id:
            return self.export(self.conversation.id)
        return None

    def export(self, conv_id: int, path: Path | None = None) -> Job | None:
        """Save a conversation as Markdown (asking where when `path` is None)."""
        if path is None:
            conv = self.conversation
            title = conv.title if conv is not None and conv.id == conv_id else "chat"
            safe = "".join(c if c.isalnum() or c in " -_" else "_" for c in title)[:40].strip() or "chat"
            chosen, _ = QFileDialog.getSaveFileName(self.window, self.tr("Export chat"),
                                                    str(Path.home() / f"{safe}.md"), self.tr("Markdown (*.md)"))
            if not chosen:
                return None
            path = Path(chosen)
        job = self.ops.export_conversation(conv_id, path)
        job.finished.connect(lambda p: self.window.statusBar().showMessage(
            self.tr("Saved {path}").format(path=p), 6000))
        job.failed.connect(self.show_failure)
        return job

    def refresh_list(self) -> None:
        """Reload the workspace's stored conversations in the sidebar."""
        ws = self.workspace
        job = self.ops.list_conversations(ws)
        job.finished.connect(lambda chats: ws == self.workspace and self.window.sidebar.set_chats(
            chats, self.conversation.id if self.conversation else None))
        job.failed.connect(self.show_failure)

    def ask(self, question: str, *, query: str | None = None) -> Job | None:
        """Ask a question in the current conversation; the answer streams in. While the scope chip shows
        chosen documents, only they are searched; `query` searches that text instead (a correction)."""
        scope = list(self.chat.scope.sources)
        return self._start(question, lambda conv_id: self.ops.ask(question, self.workspace, conv_id, scope=scope,
                                                                  query=query),
                           self.tr("Reading your documents…"))

    def research(self, question: str, query: str) -> Job | None:
        """Ask a question again, searching the query the user corrected."""
        return self.ask(question, query=query)

    def summarize(self, source: str) -> Job | None:
        """Summarize a whole document into the current conversation (progress in its card; Esc stops it)."""
        question = self.tr("Summarize {name}").format(name=Path(source).name)
        return self._start(question, lambda conv_id: self.ops.summarize(source, self.workspace, conv_id, question),
                           self.tr("Summarizing {name}…").format(name=Path(source).name))

    def ask_about(self, sources: Sequence[str]) -> None:
        """Limit the next questions to these documents (the chip above the question box shows them)."""
        self.chat.scope.set_sources(sources)
        self.chat.prompt.setFocus()

    def clear_scope(self) -> None:
        """Ask about the whole workspace again."""
        self.chat.scope.clear()

    def _start(self, question: str, submit: Callable[[int | None], Job], waiting: str) -> Job | None:
        """Show a new turn and run its job (`submit(conversation id or None)`); one at a time."""
        if self.ask_job is not None:
            self.window.statusBar().showMessage(
                self.tr("An answer is being written: wait for it, or stop it (Esc)."), 6000)
            return None
        if self.conversation is None:
            self.conversation = Conversation(0, self.workspace, question)  # stored by the job; id follows
        conv_id = self.conversation.id or None
        turn = Turn(question)
        self.conversation.turns.append(turn)
        card = self.chat.start_turn(turn)
        card.wait(self.tr("Waiting for the model to load…") if self.window.model.state == "loading" else waiting)
        self._live = (turn, card)
        job = submit(conv_id)
        self.ask_job = job
        conv = self.conversation
        job.progress.connect(lambda e: self._on_progress(conv, e))
        job.finished.connect(self._on_answer)
        job.failed.connect(self._on_failed)
        job.ended.connect(self._on_ended)
        return job

    def stop(self) -> None:
        """Stop the answer being written (Esc); with none, Esc in an empty question box clears the scope."""
        if self.ask_job is not None:
            self.ask_job.cancel()
        elif not self.chat.prompt.toPlainText().strip():
            self.clear_scope()

    def _on_progress(self, conv: Conversation, event: object) -> None:
        if isinstance(event, ConversationStarted):
            if not conv.id:
                conv.id = event.id
                self.refresh_list()
            return
        if self._live is None:
            return
        turn, card = self._live
        if isinstance(event, SummaryProgress):
            if card is not None:
                card.summary_progress(event)
        elif isinstance(event, Token):
            if card is not None:
                card.append(event.text)
            else:
                turn.text += event.text

    def _on_answer(self, answer: Any) -> None:
        if self._live is None:
            return
        turn, card = self._live
        turn.answer, turn.text = answer, answer.text
        if card is not None:
            card.finish(answer)
        if self.window.model.state != "ready" and answer.sources:
            self.window.model.set_state("ready")

    def _on_failed(self, failure: Failure) -> None:
        if self._live is None:
            return
        turn, card = self._live
        if failure.cancelled:
            turn.error = self.tr("Stopped.")
            if card is not None:
                card.stopped()
            return
        turn.error = failure.message
        if card is not None:
            card.fail(failure.message)
            self.chat.banner.show_message(failure.message, failure.hint, log_link=self.window.log_path is not None)

    def _on_ended(self) -> None:
        self.ask_job = None
        self._live = None
        self.chat.set_generating(False)
        self.chat.prompt.setFocus()

    def _detach_live_card(self) -> None:
        if self._live is not None:
            self._live = (self._live[0], None)
