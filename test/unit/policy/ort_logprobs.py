"""Reference log-probs for quantized-bundle tests: Python onnxruntime runs the bundle's graph the engine decodes
with (model.slots.onnx when the bundle has it, else model.onnx) over each whole sequence in one pass (no KV cache)
and prints log_softmax(logits / T) of every token after the prompt.

    python ort_logprobs.py BUNDLE < {"temperature": T, "prompt": [ids], "samples": [[ids], ...]}
    -> {"samples": [[logprob, ...], ...]}
"""

import json
import sys

import numpy as np
import onnxruntime as ort


def main(bundle: str) -> None:
    req = json.load(sys.stdin)
    with open(f"{bundle}/manifest.json") as f:
        manifest = json.load(f)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    slots = "model.slots.onnx" in manifest["files"]
    graph = "model.slots.onnx" if slots else "model.onnx"
    sess = ort.InferenceSession(f"{bundle}/{graph}", opts, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    prompt = req["prompt"]
    out = []
    for sampled in req["samples"]:
        ids = np.array([prompt + sampled], dtype=np.int64)
        n = ids.shape[1]
        feeds = {"input_ids": ids, "num_logits_to_keep": np.array(0, dtype=np.int64)}
        if slots:
            # No past: one ignored slot per row (the graph needs a capacity >= 1).
            feeds["past_lengths"] = np.zeros(1, np.int64)
            past = np.zeros((1, manifest["numKeyValueHeads"], 64, manifest["headDim"]), np.float32)
        else:
            feeds["attention_mask"] = np.ones_like(ids)
            if "position_ids" in names:
                feeds["position_ids"] = np.arange(n, dtype=np.int64)[None]
            past = np.zeros((1, manifest["numKeyValueHeads"], 0, manifest["headDim"]), np.float32)
        for i in range(manifest["numLayers"]):
            feeds[f"past_key_values.{i}.key"] = past
            feeds[f"past_key_values.{i}.value"] = past
        logits = sess.run(["logits"], feeds)[0][0].astype(np.float64) / req["temperature"]
        # Row j predicts token j + 1: the sampled tokens are predicted by rows len(prompt) - 1 .. n - 2.
        rows = logits[len(prompt) - 1 : n - 1]
        peak = rows.max(axis=1, keepdims=True)
        logz = peak[:, 0] + np.log(np.exp(rows - peak).sum(axis=1))
        out.append([float(rows[j, t] - logz[j]) for j, t in enumerate(sampled)])
    print(json.dumps({"samples": out}))


if __name__ == "__main__":
    main(sys.argv[1])
