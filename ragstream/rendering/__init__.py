"""The Prompt Builder's logic: the final prompt rendered from the SuperPrompt, and the whole excerpts it shows."""
