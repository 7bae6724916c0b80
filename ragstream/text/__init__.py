"""The shared text formats, one owner each: chunk ids, sentences, dates, fences, asking sentences.

Everything else builds, parses and matches these through this package, so a format changes in one
place. Nothing here imports beyond the standard library and ragstream.errors.
"""
