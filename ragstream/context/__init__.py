"""Services the stages use (token budget, telemetry, conversation memory, send); they import only downward."""
