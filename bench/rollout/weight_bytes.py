"""Bytes of weights one decode step reads from a bundle's model.onnx: every initializer, except tables that only
`Gather` nodes read (the embedding: a step reads one row per sequence). A tied lm_head that shares the embedding
table with a Gemm counts in full. Prints {"weightBytes", "gatherOnlyBytes", "initializers"} as JSON.

    gpu-worker/.venv/bin/python bench/rollout/weight_bytes.py BUNDLE/model.onnx
"""

from __future__ import annotations

import json
import sys

import numpy as np
import onnx


def tensor_bytes(t: onnx.TensorProto) -> int:
    for entry in t.external_data:
        if entry.key == "length":
            return int(entry.value)
    if t.raw_data:
        return len(t.raw_data)
    count = int(np.prod(t.dims)) if t.dims else 1
    return count * onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize


def main(path: str) -> dict:
    model = onnx.load(path, load_external_data=False)
    consumers: dict[str, set[str]] = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, set()).add(node.op_type)
    read = gathered = 0
    for init in model.graph.initializer:
        n = tensor_bytes(init)
        ops = consumers.get(init.name, set())
        if ops == {"Gather"} or ops == {"GatherBlockQuantized"}:
            gathered += n
        else:
            read += n
    return {
        "weightBytes": read,
        "gatherOnlyBytes": gathered,
        "initializers": len(model.graph.initializer),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
