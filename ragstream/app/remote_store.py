"""A LangGraph server's Store seen through the SDK, as a `BaseStore`, so `ragstream memory --server`
reads and clears a served user's memory with the same code as the local store. The server's
`@auth.on.store` handler decides what the token may see."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Item, ListNamespacesOp, Op, PutOp, Result, SearchItem, SearchOp
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import NotFoundError


def _item(row: Mapping[str, Any], cls: type[Item] = Item) -> Item:
    stamp = lambda key: datetime.fromisoformat(str(row.get(key)).replace("Z", "+00:00"))  # noqa: E731
    return cls(
        value=row["value"],
        key=row["key"],
        namespace=tuple(row["namespace"]),
        created_at=stamp("created_at"),
        updated_at=stamp("updated_at"),
    )


class RemoteStore(BaseStore):
    def __init__(self, url: str, token: str) -> None:
        self.client = get_sync_client(url=url, headers={"Authorization": f"Bearer {token}"}).store

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                try:
                    row = self.client.get_item(list(op.namespace), op.key)
                except NotFoundError:
                    row = None
                results.append(_item(row) if row else None)
            elif isinstance(op, SearchOp):
                found = self.client.search_items(list(op.namespace_prefix), limit=op.limit, offset=op.offset)
                results.append([_item(row, SearchItem) for row in found["items"]])
            elif isinstance(op, PutOp):
                if op.value is None:
                    self.client.delete_item(list(op.namespace), op.key)
                else:
                    self.client.put_item(list(op.namespace), op.key, op.value)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(
                    [
                        tuple(ns)
                        for ns in self.client.list_namespaces(max_depth=op.max_depth, limit=op.limit)["namespaces"]
                    ]
                )
            else:
                raise TypeError(f"unsupported store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)
