"""Weight-only block quantisation in onnxruntime's MatMulNBits format (int4 asymmetric, int8 symmetric).

A linear weight W [N, K] (Hugging Face's [out, in]) is cut along K into blocks of `block_size`; each block gets
a scale (and for int4 a zero point) and its codes are packed low bits first:
    packed      uint8 [N, K/block_size, block_size * bits / 8]
    scales      fp32  [N, K/block_size]
    zero_points uint8 [N, ceil(K/block_size / 2)] for int4 (two 4-bit points per byte, low nibble first);
                none for int8 (MatMulNBits then uses 2^(bits-1) = 128)
    W ~= (code - zero_point) * scale
int4 uses min/max (asymmetric) codes 0..15, the better fit for weights whose blocks are not centred on zero;
int8's 255 levels make the symmetric form accurate enough and keep the zero-point input out of the graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Quantized:
    packed: np.ndarray
    scales: np.ndarray
    zero_points: np.ndarray | None
    bits: int
    block_size: int


def quantize_blockwise(weight: torch.Tensor, bits: int, block_size: int = 32) -> Quantized:
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    if block_size < 16 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a power of two >= 16, got {block_size}")
    w = weight.detach().to("cpu", torch.float32)
    n, k = w.shape
    blocks = -(-k // block_size)
    if blocks * block_size != k:  # pad K with zeros to whole blocks (MatMulNBits ignores the tail past K)
        w = torch.nn.functional.pad(w, (0, blocks * block_size - k))
    wb = w.view(n, blocks, block_size)
    if bits == 8:
        absmax = wb.abs().amax(-1)  # [N, blocks]
        scales = torch.where(absmax > 0, absmax / 127.0, torch.ones_like(absmax))
        codes = (torch.round(wb / scales[..., None]) + 128).clamp(1, 255).to(torch.uint8)
        packed = codes.numpy()
        return Quantized(packed, scales.numpy().astype(np.float32), None, 8, block_size)
    lo = wb.amin(-1).clamp(max=0.0)  # keep 0 representable, as onnxruntime's quantiser does
    hi = wb.amax(-1).clamp(min=0.0)
    scales = (hi - lo) / 15.0
    scales = torch.where(scales > 0, scales, torch.ones_like(scales))
    zp = torch.round(-lo / scales).clamp(0, 15)  # [N, blocks]
    codes = (torch.round(wb / scales[..., None]) + zp[..., None]).clamp(0, 15).to(torch.uint8)
    packed = (codes[..., 0::2] | (codes[..., 1::2] << 4)).numpy()  # [N, blocks, block/2]
    zp_u8 = zp.to(torch.uint8)
    if blocks % 2:
        zp_u8 = torch.nn.functional.pad(zp_u8, (0, 1))
    zp_packed = (zp_u8[:, 0::2] | (zp_u8[:, 1::2] << 4)).numpy()  # [N, ceil(blocks/2)]
    return Quantized(packed, scales.numpy().astype(np.float32), zp_packed, 4, block_size)


def dequantize(q: Quantized, k: int) -> torch.Tensor:
    """The [N, K] fp32 weight MatMulNBits multiplies by: what the rollout policy really is after quantisation."""
    packed = torch.from_numpy(q.packed)
    n, blocks, _ = packed.shape
    if q.bits == 8:
        codes = packed.float()
        zp = torch.full((n, blocks), 128.0)
    else:
        codes = torch.stack((packed & 0xF, packed >> 4), dim=-1).view(n, blocks, -1).float()
        zpp = torch.from_numpy(q.zero_points)
        zp = torch.stack((zpp & 0xF, zpp >> 4), dim=-1).view(n, -1)[:, :blocks].float()
    w = (codes - zp[..., None]) * torch.from_numpy(q.scales)[..., None]
    return w.reshape(n, -1)[:, :k]
