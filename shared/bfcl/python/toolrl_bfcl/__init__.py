"""toolrl's BFCL environment process: BFCL's own multi-turn environments and checker (the `bfcl-eval`
package) behind a JSON-lines protocol on stdin/stdout, with episode state rebuilt by replaying calls."""
