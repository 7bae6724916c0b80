"""The gate's word evidence on code: what a chunk defines or does, not the names it only lists, and a definition
cut across chunks as one answer."""

from __future__ import annotations

import numpy as np

from ragstream.code.symbols import Symbol, symbols_to_metadata
from ragstream.gate.evidence import weigh_all
from ragstream.settings import default_settings
from ragstream.state import Chunk, Span

ASK = "How do I log every retry with the exception's full traceback just before it sleeps and tries again?"

EXPORTS = """from .before_sleep import before_sleep_log, before_sleep_nothing

__all__ = [
    "TryAgain",
    "before_sleep_log",
    "before_sleep_nothing",
    "retry_if_exception",
    "sleep_using_event",
]
"""

HEAD = '''def before_sleep_log(logger, log_level: int, exc_info: bool = False):
    """Before sleep strategy that logs to some logger the attempt."""

    def log_it(retry_state) -> None:
        msg = f"Retrying {retry_state.fn} in {retry_state.next_action.sleep} seconds."'''

TAIL = """        if exc_info and retry_state.outcome.failed:
            ex = retry_state.outcome.exception()
            msg += "".join(traceback.format_exception(type(ex), ex, ex.__traceback__))
        logger.log(log_level, msg)

    return log_it"""


def _code(cid: str, path: str, text: str, first: int, symbols: list[Symbol]) -> Chunk:
    last = first + text.count("\n")
    metadata = {"kind": "text", "language": "python", "line_start": first, "line_end": last}
    return Chunk(
        id=cid,
        source_path=path,
        sha256="0" * 64,
        chunk_index=0,
        text=text,
        span=Span(start=0, end=len(text)),
        metadata={**metadata, "symbols": symbols_to_metadata(symbols)} if symbols else metadata,
    )


def _evidence(chunks: list[Chunk]) -> dict[str, float]:
    """Each chunk's evidence with the same cosine for all: what differs is the words they hold."""
    vectors = np.ones((len(chunks), 4), dtype=np.float32) / 2
    found = weigh_all([ASK], chunks, vectors, np.ones((1, 4), dtype=np.float32) / 2, default_settings().gate)
    return found.evidence


def test_a_list_of_names_defined_elsewhere_is_no_word_evidence() -> None:
    """A package's export list names every function, whose words ("before sleep log", "try again") are most of
    any ask: it was kept first, above the function those names stand for."""
    exports = _code("__init__.py@x#9", "__init__.py", EXPORTS, 1, [])
    head = _code("before_sleep.py@x#2", "before_sleep.py", HEAD, 30, [Symbol("function", "before_sleep_log", 30, 40)])
    evidence = _evidence([exports, head])
    assert evidence["__init__.py@x#9"] == 1.0, "only its cosine: the names it lists are not its words"
    assert evidence["before_sleep.py@x#2"] > 1.0


def test_a_definition_cut_across_chunks_holds_the_words_of_both_halves() -> None:
    """The signature holds "log" and "sleep", the rest of the body "traceback" and "exception": each half is
    judged as the whole function, which answers."""
    symbol = Symbol("function", "before_sleep_log", 30, 44, "Before sleep strategy that logs to some logger.")
    head = _code("before_sleep.py@x#2", "before_sleep.py", HEAD, 30, [symbol])
    tail = _code("before_sleep.py@x#3", "before_sleep.py", TAIL, 38, [Symbol(**{**symbol.__dict__, "part": True})])
    evidence = _evidence([head, tail])
    assert evidence["before_sleep.py@x#2"] == evidence["before_sleep.py@x#3"]
    assert evidence["before_sleep.py@x#2"] > _evidence([head])["before_sleep.py@x#2"], "the other half's words count"
