"""A3 NLI Gate: keep or drop each candidate chunk against the normalized ask.

Near-duplicates are removed deterministically first (word 5-gram Jaccard similarity), so the
LLM never spends a call on them and the better-ranked copy always survives. With an LLM, the offline
evidence below is weighed first and the model decides only within its band: a candidate with strong
evidence is kept and one with weak evidence keeps its offline decision, unasked; the rest are judged by
the A3 agent a few passages per call (a verdict and a reason per numbered passage). A passage without a
valid verdict takes the offline decision, and a stated rule keeps the offline choice when the model
would leave nothing kept.
Offline, the gate decides from absolute evidence the pipeline already has, never relative to the best
candidate (a ratio keeps the best of a bad lot, so an ask the documents do not cover still got "evidence").
The ask is taken apart first: the query pieces, and each asking clause of the task (a multi-part
question is several asks, canonicalize.clauses), so a chunk that answers one clause is evidence for it
even when the other clause is about something no document covers. For each piece:

- the cosine similarity of the chunk's stored embedding to the piece ("meaning": what retrieval
  measured), and
- the share of the piece's content-term weight the chunk holds ("words"), each term weighted by its
  rarity in the project (idf), so a name on every page is no evidence.

A piece under `gate.min_similarity` is no evidence; otherwise the chunk is kept when its evidence for
the piece, cosine + `gate.words_weight` x words, reaches `gate.min_evidence` (so strong meaning, or fair
meaning with the ask's distinctive words, keeps it). A dropped candidate is also kept when a kept chunk
names its file in words about the ask (documents point to each other; the pointer is evidence the
text may lack). bench/gate_eval.py measures the thresholds on SciFact, `ragstream eval` on the
documentation sets of the quality suite. Every decision records these numbers, and the piece, as its
reason. Offline, the report also names the clauses of the ask (or words no document contains) that no
kept chunk covers: A4 turns them into Open issues and the Prompt Builder tells the model to say so.

One job per module: `dedup`, `evidence` (the offline gate), `calibration`, `llm_gate` (with a model),
`references`, `coverage` and `ask_parts`; the stage that runs them is `ragstream.stages.a3`.
"""
