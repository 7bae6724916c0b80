"""What a run reports about itself: stage and LLM events, the per-thread trace, optional OpenTelemetry spans."""
