"""Custom auth for the LangGraph server (`langgraph.json` "auth"): who calls, and what they may touch.

- `authenticate` resolves `Authorization: Bearer <token>` to a user of `ragstream users` (401 otherwise).
- Threads carry their owner (`metadata["owner"]`, stamped on create and on a run that creates one);
  every read, search, update, delete, copy and run is filtered to the caller's own threads.
- A run is admitted only when its input and options pass the product's validation and the user may
  use its project (`ragstream.orchestration.admission`), so a refused run never touches the thread.
- The Store is scoped to the caller: namespaces start with the user (`(user, project, ...)`), and the
  project must be one the user may use.
- Assistants (the graph) are readable; everything no handler allows is denied.

The handlers run on the server's event loop, where file-system work (reading `users.json`, resolving a
relative data root against the working directory, the project's manifest) would stall every other
request; `langgraph dev` refuses it (`BlockingError`). That work runs in a worker thread
(`asyncio.to_thread`), as LangGraph's blocking-call guard asks.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph_sdk import Auth

from ragstream.errors import InputError, ProjectError
from ragstream.orchestration.admission import admit_run
from ragstream.settings import default_settings
from ragstream.tenancy.users import User, UserRegistry

auth = Auth()


def _registry() -> UserRegistry:
    return UserRegistry.of(default_settings())


def _user(ctx: Auth.types.AuthContext) -> User:
    found = _registry().get(ctx.user.identity)
    if found is None:  # removed since the request was authenticated
        raise Auth.exceptions.HTTPException(status_code=401, detail=f"user '{ctx.user.identity}' no longer exists")
    return found


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Auth.exceptions.HTTPException(
            status_code=401, detail='send "Authorization: Bearer <token>" (ragstream users add)'
        )
    user = await asyncio.to_thread(lambda: _registry().authenticate(token.strip()))
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="invalid token")
    return {"identity": user.name, "is_authenticated": True, "permissions": []}


@auth.on
async def deny_by_default(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """What no handler below allows (crons, changing assistants, ...) is refused."""
    raise Auth.exceptions.HTTPException(status_code=403, detail=f"{ctx.resource}.{ctx.action} is not allowed")


def _owned(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, str]:
    """Stamp the owner into the metadata the server stores (the same dict: it is changed in place)."""
    metadata = value.get("metadata")
    if metadata is None:
        metadata = value["metadata"] = {}
    metadata["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}


@auth.on.threads.create
async def create_thread(ctx: Auth.types.AuthContext, value: Auth.types.on.threads.create.value) -> dict[str, str]:
    return _owned(ctx, value)


def _admit(ctx: Auth.types.AuthContext, graph_input: Any, context: Any) -> None:
    admit_run(default_settings(), _user(ctx), graph_input, context)


@auth.on.threads.create_run
async def create_run(ctx: Auth.types.AuthContext, value: Auth.types.on.threads.create_run.value) -> dict[str, str]:
    kwargs = value.get("kwargs") or {}
    try:
        await asyncio.to_thread(_admit, ctx, kwargs.get("input"), kwargs.get("context"))
    except ProjectError as exc:
        status = 403 if "not allowed" in str(exc) else 422
        raise Auth.exceptions.HTTPException(status_code=status, detail=f"{type(exc).__name__}: {exc}") from None
    except InputError as exc:
        raise Auth.exceptions.HTTPException(status_code=422, detail=f"{type(exc).__name__}: {exc}") from None
    return _owned(ctx, value)


@auth.on.threads.update
async def update_thread(ctx: Auth.types.AuthContext, value: Auth.types.on.threads.update.value) -> dict[str, str]:
    """The caller's threads only, and a thread cannot be given away (its owner stays the caller)."""
    if value.get("metadata"):
        value["metadata"]["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}


@auth.on.threads
async def own_threads(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Read, search, delete (and the read a copy starts with): the caller's threads only."""
    return {"owner": ctx.user.identity}


@auth.on.assistants.read
async def read_assistant(ctx: Auth.types.AuthContext, value: Any) -> None:
    return None


@auth.on.assistants.search
async def search_assistants(ctx: Auth.types.AuthContext, value: Any) -> None:
    return None


@auth.on.store
async def own_store(ctx: Auth.types.AuthContext, value: Any) -> None:
    """The caller's own namespaces, on projects they may use: `(user, project, ...)`."""
    namespace = tuple(value.get("namespace") or ())
    identity = ctx.user.identity
    if not namespace:
        value["namespace"] = (identity,)  # listing or searching everything: the caller's part only
        return None
    if namespace[0] != identity:
        raise Auth.exceptions.HTTPException(
            status_code=403, detail=f"store namespaces of user '{identity}' start with '{identity}'"
        )
    if len(namespace) > 1:
        project = namespace[1].replace("%2E", ".")
        try:
            (await asyncio.to_thread(_user, ctx)).require_project(project)
        except ProjectError as exc:
            raise Auth.exceptions.HTTPException(status_code=403, detail=f"ProjectError: {exc}") from None
    return None
