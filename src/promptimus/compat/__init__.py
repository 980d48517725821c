"""Everything promptimus keeps for code written against promptimus 0.1 (and the versions since):
old names, spellings, argument orders, calling forms and shim packages. The rest of the package
carries no branch for them.

The old import paths are stubs that read from here (``promptimus.vectore_store``,
``promptimus.common.rate_limiting``, ``promptimus.modules.tool``), and the tiers below reach
compat only through `promptimus._compat_seam`, by name and on first use:

- `names`: names a package had (``promptimus.errors.ProviderRetryExceded``, the agents in
  ``promptimus.modules``, ``BaseSearchResult`` in ``promptimus.vector_stores``).
- `agents`: the tools-first argument order of `ToolCallingAgent`.
- `core`, `dto`: 0.1's members of today's classes (``Module.with_provider``,
  ``ModuleDict.objects_map``, ``SearchHit.idx`` / ``.content``, ``from_buffer(mimetype=)``).
- `provider_arguments`: 0.1's arguments of the OpenAI-compatible clients (``n_retries``,
  ``base_wait``, ``embed_kwargs``, request options in the second place).
- `retrieval`: 0.1's argument orders and counts of `RAGModule` / `RetrievalModule` and its
  reranker protocol (``forward(query, result_lists)``).
- `tools`: 0.1's JSON-string form of `Tool.forward` (with ``history=``) and
  ``to_openai_function()``.
- `rate_limiting`, `vectore_store`, `search_result`, `per_document`: 0.1's types
  (`RateLimitedClient`, `BaseSearchResult`, the per-document store protocols).

Deprecated forms warn once per use with a `DeprecationWarning` naming today's form, attributed to
the caller's line; forms that only moved (the agents in ``promptimus.modules``) do not warn.
"""

from . import agents as agents
from . import core as core
from . import dto as dto
from . import names as names
from . import per_document as per_document
from . import provider_arguments as provider_arguments
from . import rate_limiting as rate_limiting
from . import retrieval as retrieval
from . import search_result as search_result
from . import tools as tools
from . import vectore_store as vectore_store
