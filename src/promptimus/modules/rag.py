"""`RAGModule`: retrieval-augmented answers with a conversation memory."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._compat_seam import compat_calls, compat_names
from ..core import Module, Parameter
from ..dto import Message, MessageRole
from ..errors import InvalidArgument
from ..prompts.template import format_template, parse_template
from .memory import Memory, MemoryModule
from .retrieval import RetrievalModule

if TYPE_CHECKING:
    from ..dto import SearchHit
    from ..protocols import EmbedderProtocol, RerankerProtocol, VectorStoreProtocol, Where

__all__ = ["DEFAULT_QUERY_TEMPLATE", "DEFAULT_RAG_SYSTEM_PROMPT", "RAGModule"]

DEFAULT_RAG_SYSTEM_PROMPT = (
    "You are a helpful assistant. Answer from the context you are given; if it does not contain "
    "the answer, say that you do not know."
)

DEFAULT_QUERY_TEMPLATE = """\
Context:
{context}

Question: {question}"""


class RAGModule(Module):
    """Answer a question from retrieved documents, remembering the conversation.

    Each `forward(question)`:

    1. retrieves documents for the question with ``retrieval`` (a `RetrievalModule`);
    2. formats ``query_template`` (a Parameter with ``{context}`` and ``{question}`` fields —
       ``{query}`` too, an older name for the question — plus
       any extra keyword arguments) into the user message sent to the LLM, after the memory;
    3. stores the exchange in memory — the user's plain question and the answer, not the stuffed
       context (that would crowd the memory window and be re-sent every turn), unless
       ``memory_stores_context=True``.

    The system prompt is a template too: it receives the same ``context``/``question`` fields.
    Memory lives in ``memory_module`` (a `MemoryModule`), so it is per `Session`, is committed
    only when the reply arrives, and is cleared by `ResetMemoryContext`. Providers (llm, embedder,
    vector_store, reranker) may be set on this module or any ancestor.
    """

    @compat_calls("retrieval:rag_arguments")
    def __init__(
        self,
        memory_size: int = 10,
        system_prompt: str = DEFAULT_RAG_SYSTEM_PROMPT,
        query_template: str = DEFAULT_QUERY_TEMPLATE,
        *,
        retrieval: RetrievalModule | None = None,
        vector_store: VectorStoreProtocol | None = None,
        text_store: VectorStoreProtocol | None = None,
        embedder: EmbedderProtocol | None = None,
        reranker: RerankerProtocol | None = None,
        n_semantic: int = 10,
        n_text: int = 10,
        n_after_rerank: int = 5,
        memory_stores_context: bool = False,
        shared_memory: Memory | None = None,
        document_separator: str = "\n\n",
    ) -> None:
        super().__init__()
        parse_template(query_template)  # a malformed template fails here, not at the first call
        if retrieval is None:
            retrieval = RetrievalModule(
                vector_store,
                text_store,
                n_semantic=n_semantic,
                n_text=n_text,
                n_after_rerank=n_after_rerank,
                embedder=embedder,
                reranker=reranker,
            )
        else:
            if text_store is not None:
                raise InvalidArgument(
                    "RAGModule: pass text_store to the RetrievalModule you give as retrieval="
                )
            if vector_store is not None:
                retrieval.with_vector_store(vector_store)
            if embedder is not None:
                retrieval.with_embedder(embedder)
            if reranker is not None:
                retrieval.with_reranker(reranker)
        self.retrieval = retrieval
        self.memory_module = MemoryModule(memory_size, shared_memory, system_prompt)
        self.query_template = Parameter(query_template)
        self.memory_stores_context = memory_stores_context
        self.document_separator = document_separator

    @property
    def memory(self) -> Memory:
        """The current session's memory (the module's own outside any `Session`)."""
        return self.memory_module.memory

    def format_context(self, hits: list[SearchHit]) -> str:
        """The text that fills ``{context}``; override to add sources, numbering or metadata."""
        return self.document_separator.join(hit.document for hit in hits)

    async def forward(
        self,
        question: str,
        where: Where | None = None,
        provider_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Message:
        hits = await self.retrieval.forward(question, where=where)
        # `query` is an older name for the question: templates written with it keep working.
        variables = {
            "query": question,
            **kwargs,
            "context": self.format_context(hits),
            "question": question,
        }
        content = format_template(
            self.query_template.value,
            variables,
            where=f"RAGModule {self.path!r} query_template",
        )
        stuffed = Message(role=MessageRole.USER, content=content)
        memory = self.memory_module.memory
        response = await self.memory_module.prompt.forward(
            memory.preview((stuffed,)), provider_kwargs=provider_kwargs, **variables
        )
        asked = (
            stuffed
            if self.memory_stores_context
            else Message(role=MessageRole.USER, content=question)
        )
        memory.extend((asked, response))
        return response


__getattr__ = compat_names(__name__)
