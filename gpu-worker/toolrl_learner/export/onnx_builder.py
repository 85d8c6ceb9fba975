"""A small helper for writing ONNX graphs node by node: unique value names, inline constants, op-domain tracking.

Hand-building the decoder (instead of tracing torch) keeps the graph's names, initializer order and external
data layout fully under our control, which is what lets a new policy version republish only the weights file.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
MS_DOMAIN = "com.microsoft"


class GraphBuilder:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.uses_ms_domain = False
        self._counter = 0
        self._consts: dict[tuple[str, tuple[int, ...], bytes], str] = {}

    def _fresh(self, hint: str) -> str:
        self._counter += 1
        return f"/{hint}/{self._counter}"

    def op(self, op_type: str, inputs: list[str], name: str | None = None, **attrs: Any) -> str:
        """Append a single-output node; return its output name."""
        return self._node(op_type, inputs, name, 1, attrs)[0]

    def ops(
        self, op_type: str, inputs: list[str], n_out: int, name: str | None = None, **attrs: Any
    ) -> list[str]:
        """Append a node with `n_out` outputs; return their names."""
        return self._node(op_type, inputs, name, n_out, attrs)

    def _node(
        self, op_type: str, inputs: list[str], name: str | None, n_out: int, attrs: dict[str, Any]
    ) -> list[str]:
        domain = attrs.pop("domain", "")
        if domain == MS_DOMAIN:
            self.uses_ms_domain = True
        base = name or self._fresh(op_type)
        outs = [base] if n_out == 1 else [f"{base}:{i}" for i in range(n_out)]
        self.nodes.append(
            helper.make_node(op_type, inputs, outs, name=f"{base}_node", domain=domain, **attrs)
        )
        return outs

    def const(self, value: Any, dtype: npt.DTypeLike = np.int64, name: str | None = None) -> str:
        """An inline (not external) initializer; identical small constants are shared."""
        arr = np.asarray(value, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if name is None and key in self._consts:
            return self._consts[key]
        cname = name or f"/const/{len(self._consts)}"
        self.initializers.append(numpy_helper.from_array(arr, cname))
        if name is None:
            self._consts[key] = cname
        return cname

    def input(self, name: str, elem_type: int, shape: list[str | int]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def output(self, value: str, name: str, elem_type: int, shape: list[str | int]) -> None:
        """Expose `value` under `name` (Identity when they differ)."""
        if value != name:
            self.nodes.append(helper.make_node("Identity", [value], [name], name=f"{name}_identity"))
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, shape))

    def model(self, graph_name: str, producer: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, graph_name, self.inputs, self.outputs, self.initializers)
        opsets = [helper.make_opsetid("", OPSET)]
        if self.uses_ms_domain:
            opsets.append(helper.make_opsetid(MS_DOMAIN, 1))
        m = helper.make_model(graph, opset_imports=opsets, producer_name=producer)
        # IR 8 is what onnxruntime 1.16+ and transformers.js' runtimes all read.
        m.ir_version = 8
        return m


FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64
INT32 = TensorProto.INT32
BOOL = TensorProto.BOOL
