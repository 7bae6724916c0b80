"""What a run reports about itself: stage and LLM events, their cost, the per-thread trace, OpenTelemetry spans."""
