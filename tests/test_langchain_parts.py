"""RAGstream's parts as LangChain parts: a retriever, embeddings, and the store opened the LangChain way."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import create_retriever_tool

from ragstream import RagstreamEmbeddings, RagstreamRetriever
from ragstream.errors import InputError, ProjectError
from ragstream.settings import Settings
from ragstream.strategies import Strategy
from ragstream.tenancy.projects import project_paths


def test_the_retriever_returns_traceable_documents(indexed: Settings) -> None:
    retriever = RagstreamRetriever(project="demo", settings=indexed, top_k=3)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("ERR_BUDGET_4711 token budget ceiling")
    assert 0 < len(docs) <= 3 and all(isinstance(d, Document) for d in docs)
    top = docs[0]
    assert top.metadata["source"] == "budget.py" and top.metadata["chunk_id"].startswith("budget.py@")
    assert (
        top.page_content
        == (indexed.data_dir / "doc_raw" / "demo" / "budget.py").read_text()[
            top.metadata["start"] : top.metadata["end"]
        ]
    )
    assert len(top.metadata["sha256"]) == 64
    assert (top.metadata["language"], top.metadata["line_start"]) == ("python", 1)  # citable as budget.py:1-6
    assert {"strategy", "rung", "score"} <= set(top.metadata) and top.metadata["strategy"] == "HYBRID"
    assert any(key.startswith("score_") for key in top.metadata)


def test_strategy_is_a_field_and_a_bad_project_is_a_project_error(indexed: Settings) -> None:
    lexical = RagstreamRetriever(project="demo", settings=indexed, strategy=Strategy.KEYWORD)
    assert {d.metadata["strategy"] for d in lexical.invoke("fenced excerpt")} == {"KEYWORD"}
    with pytest.raises(ProjectError, match="no project 'nowhere'"):
        RagstreamRetriever(project="nowhere", settings=indexed).invoke("anything")


def test_the_retriever_works_as_a_tool_and_in_an_lcel_chain(indexed: Settings) -> None:
    retriever = RagstreamRetriever(project="demo", settings=indexed, top_k=2)
    tool = create_retriever_tool(retriever, "search_notes", "Search the project's notes.")
    assert "budget" in tool.invoke({"query": "ERR_BUDGET_4711"}).lower()
    chain = retriever | RunnableLambda(lambda docs: "\n".join(d.metadata["source"] for d in docs))
    assert "budget.py" in chain.invoke("ERR_BUDGET_4711")


def test_the_embeddings_are_langchain_embeddings_and_open_the_collection(indexed: Settings) -> None:
    from langchain_chroma import Chroma

    from ragstream.index.store import chroma_client, collection_name

    embeddings = RagstreamEmbeddings(indexed)
    assert isinstance(embeddings, Embeddings)
    vector = embeddings.embed_query("token budget")
    assert len(vector) == 384 and abs(sum(v * v for v in vector) - 1) < 1e-3
    store = Chroma(
        client=chroma_client(indexed, project_paths(indexed, "demo")),
        collection_name=collection_name("demo"),
        embedding_function=embeddings,
    )
    found = store.similarity_search("ERR_BUDGET_4711 token budget ceiling", k=2)
    assert found and found[0].metadata["path"] == "budget.py"
    ours = RagstreamRetriever(project="demo", settings=indexed, strategy=Strategy.DENSE, top_k=1).invoke(
        "ERR_BUDGET_4711 token budget ceiling"
    )
    assert found[0].page_content == ours[0].page_content


def test_the_offline_provider_is_a_chat_model_with_structured_output_and_streaming(base_settings: Settings) -> None:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.prompts import ChatPromptTemplate
    from pydantic import BaseModel

    from ragstream.llm.providers.local_provider import LocalChatModel

    model = LocalChatModel(embedding=base_settings.embedding, models_dir=base_settings.models_dir)
    assert isinstance(model, BaseChatModel)
    schema = {
        "type": "object",
        "properties": {
            "kind": {
                "type": "string",
                "enum": ["table", "prose", "unknown"],
                "x-fallback": "unknown",
                "x-cues": {"table": ["table"]},
            }
        },
        "required": ["kind"],
    }
    chain = ChatPromptTemplate.from_messages([("human", "{request}")]) | model.with_structured_output(schema)
    assert chain.invoke({"request": "Answer with a table, please."}) == {"kind": "table"}

    class Shape(BaseModel):
        kind: str

    assert isinstance(model.with_structured_output(Shape).invoke("prose"), Shape)
    chunks = list(model.stream("The reranker fuses scores. Excerpts are fenced. Edits are kept."))
    assert len(chunks) > 3 and "".join(c.content for c in chunks).startswith("The reranker fuses scores.")


def test_the_offline_chat_model_says_what_it_is_when_a_message_has_nothing_to_extract(base_settings: Settings) -> None:
    from ragstream.llm.providers.local_provider import LocalChatModel

    model = LocalChatModel(embedding=base_settings.embedding, models_dir=base_settings.models_dir)
    reply = model.invoke("Hello")
    assert "not a language model" in reply.content and "no LLM is configured" in reply.content
    assert reply.response_metadata["model_name"] == "local:local"
    last = list(model.stream("Hello"))[-1]
    assert last.response_metadata["model_name"] == "local:local" and last.usage_metadata["output_tokens"] > 0


def test_the_retriever_takes_k_per_call_and_rejects_a_bad_one(indexed: Settings) -> None:
    retriever = RagstreamRetriever(project="demo", settings=indexed, k=4)
    query = "How are documents ingested, chunked and retrieved?"
    assert len(retriever.invoke(query)) == 4 and len(retriever.invoke(query, k=2)) == 2
    with pytest.raises(InputError, match="k must be a positive integer"):
        retriever.invoke(query, k=0)
