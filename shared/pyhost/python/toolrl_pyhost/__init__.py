"""toolrl's Python host: runs user tool classes (verl's BaseTool interface) and reward functions (verl's
compute_score signature) in one long-lived process, driven by JSON lines on stdin/stdout (see server.py)."""
