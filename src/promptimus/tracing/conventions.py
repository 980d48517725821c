"""The attribute names promptimus spans carry, and the convention versions they follow.

Two vocabularies, side by side on the same spans:
- OpenInference (what Phoenix and Arize read natively): `openinference.span.kind`,
  `input.value`, `llm.input_messages.N.message.role`, `llm.token_count.*`, `tool.*`,
  `retrieval.documents.N.document.*`, `reranker.*`, `embedding.*`, `session.id`, `metadata`;
- OpenTelemetry GenAI (read by Langfuse, Logfire, Datadog..., and converted by Phoenix):
  `gen_ai.operation.name`, `gen_ai.request.model`, `gen_ai.usage.*`, `gen_ai.tool.*`, ...

The names are written out here (not imported from `openinference-semantic-conventions`) so that
`promptimus.tracing` needs only `opentelemetry-api`. Bump the versions below together with any
name that changes; `tests/tracing/test_tracing_conventions.py` checks the names against the
installed `openinference-semantic-conventions` package.
"""

from __future__ import annotations

from typing import Final

OPENINFERENCE_CONVENTIONS_VERSION: Final = "0.1.42"
"""openinference-semantic-conventions release whose names these are."""

GENAI_CONVENTIONS_VERSION: Final = "1.44.0"
"""OpenTelemetry semantic conventions release for the `gen_ai.*` names (development status)."""

# --- OpenInference ------------------------------------------------------------------------------
SPAN_KIND: Final = "openinference.span.kind"
INPUT_VALUE: Final = "input.value"
INPUT_MIME_TYPE: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
OUTPUT_MIME_TYPE: Final = "output.mime_type"
METADATA: Final = "metadata"
SESSION_ID: Final = "session.id"

LLM_MODEL_NAME: Final = "llm.model_name"
LLM_SYSTEM: Final = "llm.system"
LLM_INVOCATION_PARAMETERS: Final = "llm.invocation_parameters"
LLM_INPUT_MESSAGES: Final = "llm.input_messages"
LLM_OUTPUT_MESSAGES: Final = "llm.output_messages"
LLM_TOOLS: Final = "llm.tools"
LLM_PROMPT_TEMPLATE: Final = "llm.prompt_template.template"
LLM_PROMPT_TEMPLATE_VARIABLES: Final = "llm.prompt_template.variables"
LLM_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION: Final = "llm.token_count.completion"
LLM_TOKEN_COUNT_TOTAL: Final = "llm.token_count.total"
LLM_TOKEN_COUNT_CACHE_READ: Final = "llm.token_count.prompt_details.cache_read"
LLM_TOKEN_COUNT_REASONING: Final = "llm.token_count.completion_details.reasoning"
LLM_COST_PROMPT: Final = "llm.cost.prompt"
LLM_COST_COMPLETION: Final = "llm.cost.completion"
LLM_COST_TOTAL: Final = "llm.cost.total"

MESSAGE_ROLE: Final = "message.role"
MESSAGE_CONTENT: Final = "message.content"
MESSAGE_TOOL_CALLS: Final = "message.tool_calls"
MESSAGE_TOOL_CALL_ID: Final = "message.tool_call_id"
TOOL_CALL_ID: Final = "tool_call.id"
TOOL_CALL_FUNCTION_NAME: Final = "tool_call.function.name"
TOOL_CALL_FUNCTION_ARGUMENTS: Final = "tool_call.function.arguments"
TOOL_JSON_SCHEMA: Final = "tool.json_schema"

TOOL_NAME: Final = "tool.name"
TOOL_DESCRIPTION: Final = "tool.description"
TOOL_PARAMETERS: Final = "tool.parameters"

RETRIEVAL_DOCUMENTS: Final = "retrieval.documents"
DOCUMENT_ID: Final = "document.id"
DOCUMENT_CONTENT: Final = "document.content"
DOCUMENT_SCORE: Final = "document.score"
DOCUMENT_METADATA: Final = "document.metadata"

EMBEDDING_MODEL_NAME: Final = "embedding.model_name"
EMBEDDING_EMBEDDINGS: Final = "embedding.embeddings"
EMBEDDING_TEXT: Final = "embedding.text"

RERANKER_QUERY: Final = "reranker.query"
RERANKER_MODEL_NAME: Final = "reranker.model_name"
RERANKER_TOP_K: Final = "reranker.top_k"
RERANKER_INPUT_DOCUMENTS: Final = "reranker.input_documents"
RERANKER_OUTPUT_DOCUMENTS: Final = "reranker.output_documents"

# span kinds (values of SPAN_KIND)
CHAIN: Final = "CHAIN"
LLM: Final = "LLM"
TOOL: Final = "TOOL"
AGENT: Final = "AGENT"
RETRIEVER: Final = "RETRIEVER"
EMBEDDING: Final = "EMBEDDING"
RERANKER: Final = "RERANKER"
SPAN_KINDS: Final = frozenset({CHAIN, LLM, TOOL, AGENT, RETRIEVER, EMBEDDING, RERANKER})

# mime types
TEXT: Final = "text/plain"
JSON: Final = "application/json"

# --- OpenTelemetry GenAI ------------------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_STREAM: Final = "gen_ai.request.stream"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_RETRIEVAL_QUERY_TEXT: Final = "gen_ai.retrieval.query.text"

# values of GEN_AI_OPERATION_NAME
OP_CHAT: Final = "chat"
OP_EMBEDDINGS: Final = "embeddings"
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_RETRIEVAL: Final = "retrieval"
