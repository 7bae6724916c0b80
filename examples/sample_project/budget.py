"""Token budget for the condensed context (example source file in the sample project)."""


def fits(tokens_used: int, ceiling: int = 1800) -> bool:
    """Return True while the selection stays under the ceiling; error code ERR_BUDGET_4711 otherwise."""
    return tokens_used <= ceiling
