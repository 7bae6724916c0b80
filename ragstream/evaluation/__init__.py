"""`ragstream eval`: a labelled suite run through the real graph, judged stage by stage.

suite    reads the three suite formats (a case folder, BEIR, JSONL) and refuses a bad suite before anything runs
checks   what a case's fields (and every final prompt) require of the final prompt, one named check each
metrics  rank metrics per retrieval stage, percentiles, and the paired test a comparison reports
runner   ingests the corpus into the suite's project and runs every case, collecting per-case results
report   the terminal summary and the JSON a saved run holds
"""
