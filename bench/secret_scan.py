"""What secret scanning costs per file at ingestion, and what it finds, on a corpus it was not tuned on.

    python bench/secret_scan.py [FOLDER ...]   # default: the docs and sources of a few installed packages

Prints files, lines, the share of lines the regex screen hands to detect-secrets, the one-time import
of detect-secrets, median and p95 milliseconds per file, and the findings by type (a sample of each,
with file and line, never the value), so false positives can be judged by eye.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from ragstream.secrets.scan import candidate_lines, scan
from ragstream.settings import load_settings

SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
DEFAULT = [SITE / name for name in ("httpx", "pydantic", "langgraph", "chromadb", "streamlit")]
SUFFIXES = {".md", ".rst", ".txt", ".py", ".json", ".yaml", ".yml", ".toml", ".cfg", ".ini"}


def main() -> None:
    folders = [Path(a) for a in sys.argv[1:]] or DEFAULT
    files = [p for folder in folders for p in sorted(folder.rglob("*")) if p.suffix in SUFFIXES and p.is_file()]
    settings = load_settings().secrets
    started = time.perf_counter()
    scan("token = 'x8Gq2LmN4pR7sT9vW1yZ3bC5dF6hJ0kQ'\n", "warm.py", settings)  # the one-time import
    import_s = time.perf_counter() - started
    times, lines, candidates, found, samples = [], 0, 0, Counter(), {}
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        split = text.split("\n")
        lines += len(split)
        candidates += len(candidate_lines(text))
        t0 = time.perf_counter()
        result = scan(text, path.name, settings)
        times.append((time.perf_counter() - t0) * 1000)
        for f in result.findings:
            found[f.type] += 1
            samples.setdefault(f.type, f"{path.relative_to(path.parents[2])}:{f.line}")
    times.sort()
    print(f"{len(times)} files, {lines} lines, {candidates / max(lines, 1):.1%} of lines screened in")
    print(f"detect-secrets import + first scan: {import_s:.2f} s (once per process)")
    print(
        f"per file: median {statistics.median(times):.2f} ms, p95 {times[int(0.95 * (len(times) - 1))]:.2f} ms, "
        f"total {sum(times) / 1000:.1f} s ({sum(times) / max(lines, 1) * 1000:.1f} us per line)"
    )
    for kind, n in found.most_common():
        print(f"  {n:5d} {kind:32s} e.g. {samples[kind]}")


if __name__ == "__main__":
    main()
