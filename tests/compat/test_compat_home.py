"""0.1 compatibility lives in `promptimus.compat` only: the tiers below name it by string (never
import it), today's calls neither warn nor change, every older form warns at the caller's line,
and names that only moved are the very same objects."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from locations import REPO

import promptimus as pm
from promptimus.compat.names import RENAMED, SERVED
from promptimus.dto import SearchHit
from promptimus.errors import ToolError
from promptimus.llms import OpenAILike
from promptimus.modules import RAGModule, RetrievalModule
from promptimus.rerankers import OpenAILikeReranker, RRFReranker
from promptimus.vector_stores import InMemoryVectorStore

SRC = REPO / "src" / "promptimus"


def modules_after(code: str) -> list[str]:
    probe = (
        f"{code}\n"
        "import json, sys\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('promptimus.compat') "
        "or m.split('.')[0] in ('openai', 'httpx', 'numpy', 'chromadb', 'tomlkit'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_importing_the_tiers_does_not_load_compat() -> None:
    code = (
        "import promptimus, promptimus.errors, promptimus.modules, promptimus.llms, "
        "promptimus.embedders, promptimus.rerankers, promptimus.vector_stores, "
        "promptimus.core.module\n"
        "from promptimus.modules import Prompt, MemoryModule, RetrievalModule, RAGModule"
    )
    assert modules_after(code) == []


def test_compat_itself_is_light() -> None:
    loaded = modules_after("import promptimus.compat")
    assert "promptimus.compat" in loaded
    assert [m for m in loaded if not m.startswith("promptimus.")] == []


# ------------------------------------------------------------------ older forms warn once, here

STORE = InMemoryVectorStore()

OLDER_FORMS: dict[str, Callable[[], Any]] = {
    "OpenAILike n_retries": lambda: OpenAILike("m", api_key="k", n_retries=2),
    "OpenAILike base_wait": lambda: OpenAILike("m", api_key="k", base_wait=0.5),
    "OpenAILike positional options": lambda: OpenAILike("m", {"temperature": 0}),
    "embedder embed_kwargs": lambda: pm.embedders.OpenAILikeEmbedder("e", embed_kwargs={}),
    "reranker rerank_kwargs": lambda: OpenAILikeReranker("r", base_url="x", rerank_kwargs={}),
    "RAGModule stores first": lambda: RAGModule(STORE),
    "RAGModule n_results": lambda: RAGModule(n_results=2),
    "RetrievalModule n_results": lambda: RetrievalModule(n_results=2),
    "Module.with_provider": lambda: pm.modules.MemoryModule().with_provider(pm.llms.DummyLLM()),
    "ModuleDict.objects_map": lambda: pm.ModuleDict().objects_map,
    "from_buffer mimetype": lambda: pm.ImageContent.from_buffer(b"x", mimetype="image/gif"),
    "errors.ProviderRetryExceded": lambda: pm.errors.ProviderRetryExceded,
    "errors.UnknownTool": lambda: pm.errors.UnknownTool,
}


@pytest.mark.parametrize("form", sorted(OLDER_FORMS))
def test_an_older_form_warns_once_at_the_callers_line(form: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        OLDER_FORMS[form]()
    assert [w.category for w in caught] == [DeprecationWarning]
    assert caught[0].filename == __file__, form


def test_every_renamed_name_warns_and_gives_todays_object() -> None:
    for package, names in RENAMED.items():
        module = importlib.import_module(package)
        for name, target in names.items():
            with pytest.warns(DeprecationWarning, match=target):
                value = getattr(module, name)
            home, _, attribute = target.rpartition(".")
            assert value is getattr(importlib.import_module(home), attribute)
    assert pm.errors.ToolError is ToolError


def test_names_that_only_moved_are_served_as_they_are() -> None:
    assert len(SERVED["promptimus.modules"]) == 22
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for package, names in SERVED.items():
            module = importlib.import_module(package)
            for name, home in names.items():
                assert getattr(module, name) is getattr(importlib.import_module(home), name)
        from promptimus.modules import BaseAgent, OpenaiToolCallingAgent, capture_records

    assert BaseAgent is pm.agents.BaseAgent
    assert OpenaiToolCallingAgent is pm.agents.OpenaiToolCallingAgent
    assert capture_records is pm.agents.capture_records


# ------------------------------------------------------------------ today's forms are untouched


async def test_todays_forms_do_not_warn_and_keep_todays_signatures() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        llm = OpenAILike("m", "k", "http://127.0.0.1:9/v1", max_retries=1, call_kwargs={"a": 1})
        rag = RAGModule(3, "You answer.", vector_store=STORE, n_semantic=2)
        retrieval = RetrievalModule(STORE, None, 4, 0, 2)
        a, b = SearchHit("a", "A", 1.0), SearchHit("b", "B", 0.5)
        fused = await RRFReranker().forward([[a, b], [b]], 1)
        image = pm.ImageContent.from_buffer(b"x", "image/gif")
    assert (llm.retry.max_retries, llm.call_kwargs) == (1, {"a": 1})
    assert (rag.memory_module.memory.size, rag.retrieval.n_semantic) == (3, 2)
    assert (retrieval.n_semantic, retrieval.n_text, retrieval.n_after_rerank) == (4, 0, 2)
    assert [h.id for h in fused] == ["b"]
    assert image.url.startswith("data:image/gif;base64,")
    for function, old in [
        (RAGModule, "n_results"),
        (RetrievalModule, "n_results"),
        (pm.ImageContent.from_buffer, "mimetype"),
    ]:
        assert old not in inspect.signature(function).parameters


# ------------------------------------------------------------------ no 0.1 branch below compat

# Deprecated forms still raised outside compat, in code other work is moving: each entry names
# the file and what it still serves there.
NOT_YET_MOVED = {
    "agents/base_agent.py": "agent.predicor",
    "prompts/prompt.py": "Prompt(provider=...)",
    "tools/tool.py": "Tool.to_openai_function()",
}


def test_deprecation_warnings_are_raised_in_compat_only() -> None:
    raising = {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if "DeprecationWarning" in path.read_text(encoding="utf-8")
        and path.relative_to(SRC).parts[0] != "compat"
    }
    assert raising <= set(NOT_YET_MOVED), sorted(raising - set(NOT_YET_MOVED))
