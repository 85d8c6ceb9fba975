"""ONNX rollout bundle export: the decoder graph, its external weights, quantisation, manifest and republish."""
