"""Many users on one LangGraph server: concurrent SDK sessions, their latency, errors and the server's memory.

Starts `langgraph dev` on loopback over a SciFact project (local provider), then `--clients` SDK clients
each run whole sessions for `--seconds`: start a run (it pauses after A4), edit the condensed context,
resume, read the final prompt, and check that it holds this session's own claim and edit (runs of
different users must never mix). Printed: sessions per minute, p50/p95 session latency, errors (must be
0), and the server's resident memory after a warm-up session per client and at the end (each session
deletes its thread when done unless --keep-threads).

With --heavy, client 0 sends prompts at the server's limit (`server.max_prompt_chars`) and the others'
latency is printed apart: one user's huge prompts must not starve the others (compare the p95 with a
run without --heavy). The server runs with `--n-jobs-per-worker` = the number of clients.

With --sessions N, the clients run exactly N sessions after the warm-up, in --rounds rounds, and the
server's memory after each round gives its growth in MB per session (least squares over the rounds).
With --snapshots as well, the server traces its heap (`RAGSTREAM_HEAP_SNAPSHOTS`, see
`ragstream.telemetry.heap_snapshots`) and takes a snapshot after each round; printed: what grew from the first
round to the last, by allocating line and by object type (tracing slows the server and adds to its
memory: take MB per session from a run without --snapshots).

What grows is `langgraph dev`'s own in-memory runtime, not RAGstream: deleting a thread removes its
checkpoints and writes but not its channel values (`blobs`), so every session leaves its state behind
(langgraph_runtime_inmem/ops.py `_delete_checkpoints_for_thread`; langchain-ai/langgraph issue #8054).
With --inmem-delete-fix the server runs with that deletion completed (a `sitecustomize` in the server's
path, bench only), to show what else grows. A deployment's checkpointer (PostgreSQL) deletes a
thread's blobs with the thread.

Run: python bench/load.py [--clients 8] [--seconds 120 | --sessions 200 [--rounds 10] [--snapshots]]
     [--inmem-delete-fix] [--docs 0 (all)] [--work data/bench-load] [--heavy]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import uuid
from collections import Counter
from pathlib import Path

import httpx
from langgraph_sdk import get_sync_client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.retrieval_eval import DEFAULT_DATA, read_jsonl, write_corpus  # noqa: E402
from ragstream.ingestion.manager import IngestionManager  # noqa: E402
from ragstream.settings import load_settings  # noqa: E402
from ragstream.tenancy.users import UserRegistry  # noqa: E402

# The server's thread deletion, completed: its channel values go with the thread (bench only; see above).
INMEM_DELETE_FIX = """
import sys, threading, time

def _patch():
    while "langgraph_runtime_inmem.ops" not in sys.modules:
        time.sleep(0.1)
    time.sleep(1.0)  # the module has finished loading
    ops = sys.modules["langgraph_runtime_inmem.ops"]
    original = ops._delete_checkpoints_for_thread

    async def delete(thread_id, conn, run_id=None):
        await original(thread_id, conn, run_id)
        if run_id is None:
            blobs = ops.Checkpointer().blobs
            for key in [k for k in blobs if k[0] == str(thread_id)]:
                del blobs[key]

    ops._delete_checkpoints_for_thread = delete

threading.Thread(target=_patch, daemon=True).start()
"""


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            continue
    return total


def session(url: str, claim: str, keep: bool, headers: dict[str, str], padding: str = "") -> float:
    """One user's whole session; raises if anything is wrong, including another user's text. The thread
    is deleted at the end unless `keep`: `langgraph dev` holds every checkpoint in memory, so kept
    threads grow the server by their own data (a deployment keeps them in PostgreSQL)."""
    client = get_sync_client(url=url, timeout=300, headers=headers)
    marker = uuid.uuid4().hex[:10]
    started = time.perf_counter()
    tid = client.threads.create()["thread_id"]
    prompt = f"# Task\nIs this claim supported? {claim}\n# Context\nsession {marker}{padding}"
    client.runs.wait(tid, "ragstream", input={"prompt": prompt}, context={"project": "scifact"})
    state = client.threads.get_state(tid)
    if state["next"] != ["review"]:
        raise RuntimeError(f"session {marker}: expected the review after A4, got {state['next']}")
    answer = {"s_ctx_md": f"### Facts\n- reviewed in session {marker}"}
    client.runs.wait(tid, "ragstream", command={"resume": answer}, context={"project": "scifact"})
    final = client.threads.get_state(tid)["values"]["prompt_ready"]
    if claim not in final or f"session {marker}" not in final or f"reviewed in session {marker}" not in final:
        raise RuntimeError(f"session {marker}: the final prompt is not this session's")
    took = time.perf_counter() - started
    if not keep:
        client.threads.delete(tid)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--docs", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("data/bench-load"))
    parser.add_argument("--port", type=int, default=2099)
    parser.add_argument(
        "--keep-threads", action="store_true", help="keep each session's thread (the server grows by its data)"
    )
    parser.add_argument("--heavy", action="store_true", help="client 0 sends prompts at the server's prompt limit")
    parser.add_argument("--sessions", type=int, default=0, help="run this many sessions (instead of --seconds)")
    parser.add_argument("--rounds", type=int, default=10, help="with --sessions: memory samples (and snapshots)")
    parser.add_argument("--snapshots", action="store_true", help="with --sessions: heap snapshots after each round")
    parser.add_argument(
        "--inmem-delete-fix", action="store_true", help="the server deletes a deleted thread's blobs too (see above)"
    )
    args = parser.parse_args()

    settings = load_settings(overrides={"data_dir": str(args.work), "llm.provider": "local"})
    write_corpus(DEFAULT_DATA, settings.data_dir / "doc_raw" / "scifact", args.docs)
    IngestionManager(settings).ingest("scifact")
    claims = [q["text"] for q in read_jsonl(DEFAULT_DATA / "queries.jsonl")]
    registry = UserRegistry.of(settings)  # the server admits only users with a token
    if registry.get("bench"):
        registry.remove("bench")
    headers = {"Authorization": "Bearer " + registry.add("bench", ["scifact"])}
    filler = "\n" + " ".join(claims)
    heavy_padding = (filler * (settings.server.max_prompt_chars // len(filler) + 1))[
        : settings.server.max_prompt_chars - 400
    ]

    workdir = Path(tempfile.mkdtemp(prefix="ragstream-load-"))
    for name in ("langgraph.json", "graphs"):
        (workdir / name).symlink_to(ROOT / name)
    env = {
        **os.environ,
        "RAGSTREAM_DATA_DIR": str(settings.data_dir.resolve()),
        "RAGSTREAM_LLM_PROVIDER": "local",
        "RAGSTREAM_CONFIG_DIR": str(ROOT / "config"),
        "LANGSMITH_TRACING": "false",
        "BG_JOB_ISOLATED_LOOPS": "true",
    }
    snapshots = workdir / "heap"
    if args.snapshots:
        env["RAGSTREAM_HEAP_SNAPSHOTS"] = str(snapshots)
    if args.inmem_delete_fix:
        (workdir / "site").mkdir()
        (workdir / "site" / "sitecustomize.py").write_text(INMEM_DELETE_FIX)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(workdir / "site"), env.get("PYTHONPATH")]))
    log = (workdir / "server.log").open("w")
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "langgraph"),
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(args.port),
            "--n-jobs-per-worker",
            str(args.clients),
        ],
        cwd=workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{args.port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        warmups = [  # warm-up: one session per client, all at once, so memory reaches its concurrent working set
            threading.Thread(target=session, args=(url, claims[i], args.keep_threads, headers))
            for i in range(args.clients)
        ]
        for thread in warmups:
            thread.start()
        for thread in warmups:
            thread.join()
        warm_rss = tree_rss_mb(server.pid)

        latencies: list[float] = []
        heavy_latencies: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()
        stop = time.monotonic() + (float("inf") if args.sessions else args.seconds)
        tickets = [0]  # with --sessions: sessions left in this round

        def more() -> bool:
            if not args.sessions:
                return time.monotonic() < stop
            with lock:
                tickets[0] -= 1
                return tickets[0] >= 0

        def user(offset: int) -> None:
            n = offset
            heavy = args.heavy and offset == 0
            while more():
                try:
                    took = session(
                        url, claims[n % len(claims)], args.keep_threads, headers, heavy_padding if heavy else ""
                    )
                    with lock:
                        (heavy_latencies if heavy else latencies).append(took)
                except Exception as exc:  # noqa: BLE001 - every failure is counted and shown
                    with lock:
                        errors.append(f"{type(exc).__name__}: {exc}")
                n += args.clients

        samples: list[float] = []

        def sample() -> None:  # the server's memory over time: a plateau or a slope
            while time.monotonic() < stop:
                time.sleep(min(args.seconds / 6, max(0.0, stop - time.monotonic())))
                samples.append(tree_rss_mb(server.pid))

        started = time.monotonic()
        if args.sessions:
            rounds = growth_rounds(args, server.pid, user, tickets, snapshots, lambda: len(latencies))
        else:
            threads = [threading.Thread(target=user, args=(i,)) for i in range(args.clients)]
            threads.append(threading.Thread(target=sample))
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        elapsed = time.monotonic() - started
        end_rss = tree_rss_mb(server.pid)
        latencies.sort()
        print(
            f"{args.clients} clients for {elapsed:.0f} s: "
            f"{len(latencies)} sessions = {len(latencies) / elapsed * 60:.1f} "
            f"sessions/min; session latency p50 {statistics.median(latencies):.2f} s, "
            f"p95 {latencies[int(0.95 * (len(latencies) - 1))]:.2f} s; errors {len(errors)}"
        )
        if args.heavy:
            print(
                f"  (the {len(latencies)} sessions above are the other clients'; client 0 sent "
                f"~{len(heavy_padding):,}-character prompts: {len(heavy_latencies)} sessions, "
                f"median {statistics.median(heavy_latencies) if heavy_latencies else float('nan'):.2f} s)"
            )
        for error in errors[:5]:
            print(f"  error: {error}")
        print(
            f"server RSS after warm-up {warm_rss:.0f} MB, at the end {end_rss:.0f} MB "
            f"(samples: {', '.join(f'{mb:.0f}' for mb in samples)})"
        )
        if args.sessions:
            print_growth(rounds, warm_rss, snapshots if args.snapshots else None)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(workdir, ignore_errors=True)


def growth_rounds(args, pid, user, tickets, snapshots: Path, done) -> list[tuple[int, float]]:
    """Run --sessions sessions in --rounds rounds of all clients; (sessions done, server MB) after each
    round, with a heap snapshot requested and awaited when --snapshots."""
    per_round = max(1, args.sessions // args.rounds)
    points: list[tuple[int, float]] = []
    for number in range(1, args.rounds + 1):
        tickets[0] = per_round
        threads = [threading.Thread(target=user, args=(i,)) for i in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if args.snapshots:
            (snapshots / "request").touch()
            deadline = time.monotonic() + 300
            while not (snapshots / f"types-{number}.json").exists() and time.monotonic() < deadline:
                time.sleep(0.5)
        points.append((done(), tree_rss_mb(pid)))
        print(f"round {number}: {points[-1][0]} sessions, server RSS {points[-1][1]:.1f} MB", flush=True)
    return points


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares MB per session."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def print_growth(rounds: list[tuple[int, float]], warm_rss: float, snapshots: Path | None) -> None:
    sessions = rounds[-1][0] - rounds[0][0]
    print(
        f"server growth: {slope(rounds) * 1000:.1f} kB per session (least squares over {len(rounds)} rounds); "
        f"{(rounds[-1][1] - rounds[0][1]) * 1000 / max(1, sessions):.1f} kB per session from round 1 to the last "
        f"({sessions} sessions); {(rounds[-1][1] - warm_rss) / max(1, rounds[-1][0]):.3f} MB per session since "
        "the warm-up"
    )
    if snapshots is None:
        return
    last = len(rounds)
    first_snap = tracemalloc.Snapshot.load(str(snapshots / "heap-1.pickle"))
    last_snap = tracemalloc.Snapshot.load(str(snapshots / f"heap-{last}.pickle"))
    print(f"traced heap growth from round 1 to round {last}, by allocating line (top 15):")
    for stat in last_snap.compare_to(first_snap, "lineno")[:15]:
        print(f"  {stat.size_diff / 1024:+9.1f} kB {stat.count_diff:+7d} blocks  {stat.traceback}")
    print("by traceback (top 5):")
    for stat in last_snap.compare_to(first_snap, "traceback")[:5]:
        print(f"  {stat.size_diff / 1024:+9.1f} kB {stat.count_diff:+7d} blocks")
        for line in stat.traceback.format()[-12:]:
            print(f"      {line}")
    before = Counter(json.loads((snapshots / "types-1.json").read_text()))
    after = Counter(json.loads((snapshots / f"types-{last}.json").read_text()))
    grown = sorted(((after[k] - before.get(k, 0), k) for k in after), reverse=True)[:15]
    print("live objects grown, by type: " + ", ".join(f"{name} {diff:+d}" for diff, name in grown if diff > 0))


if __name__ == "__main__":
    main()
