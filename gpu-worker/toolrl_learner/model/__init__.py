"""The policy model: config, packed-attention decoder, HF checkpoint I/O, chunked log-probs, tiny-model factory."""
