"""Drivers feed a LearnerSession from somewhere: stdio (the embedded runtime), sqs (LocalStack, AWS)
and offline (a JSONL file of scored groups)."""
