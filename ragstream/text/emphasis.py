"""Markdown emphasis by underscores, read as the words it marks.

Lexical search reads `_` as a letter of a word, so "_Boxes_ allow you to store data on the heap" held the term
"_boxes_", never "box", and "the _tests_ directory" no "test": the Rust book and Black's docs (every "_Black_")
mark words this way, and an ask naming them lost their word evidence. Only a single underscore on each side of a
span that holds none counts: `__init__`, `snake_case` and `_private_name` stay as written.
"""

from __future__ import annotations

import re

_UNDERSCORE_EMPHASIS = re.compile(r"(?<![\w*])_(?=[^\s_])([^_\n]*?[^\s_])_(?![\w*])")


def without_underscore_emphasis(text: str) -> str:
    """`text` with the underscores of `_emphasis_` left out (offsets are not kept)."""
    return _UNDERSCORE_EMPHASIS.sub(r"\1", text) if "_" in text else text
