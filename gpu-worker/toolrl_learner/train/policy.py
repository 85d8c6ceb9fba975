"""The policy being trained: the decoder (full fine-tuning or LoRA through peft), an optional value head,
the reference policy, and the forward pass of one packed micro-batch down to per-token log-probs.

Only the hidden states that predict sampled tokens reach the vocabulary projection, and that
projection runs in chunks (model/logprobs.py), so [tokens x vocabulary] logits never exist.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from ..config import LearnerConfig
from .lora import lora_config
from .packing import MicroBatch
from .precision import autocast, autocast_dtype, describe

if TYPE_CHECKING:
    from ..model.config import ModelConfig
    from ..model.modeling import CausalLM

log = logging.getLogger(__name__)


@dataclass
class ForwardOut:
    logprobs: Tensor  # [n] log pi(y_t | y_<t) under logits / temperature
    entropy: Tensor | None  # [n]
    values: Tensor | None  # [n] V(state before y_t)


def resolve_model_dir(model_path: str, workdir: Path, seed: int = 0) -> Path:
    """A model folder for `model.path`: `tiny` / `tiny:<variant or preset>` are built (deterministically) under
    workdir, their random weights drawn with the run's seed (the tokenizer is the same for every seed); a built-in
    name (smollm2-135m-instruct) or a .gguf file is converted once into the model cache (model/model_store.py)."""
    from ..model.tiny import build_tiny, is_tiny, tiny_spec

    if is_tiny(model_path):
        spec = tiny_spec(model_path, seed)
        preset = model_path.partition(":")[2]
        out = workdir / ("model-tiny" + (f"-{preset}" if preset else ""))
        if not (out / "config.json").is_file():
            build_tiny(out, spec)
        return out
    from ..model.model_store import NAMED_MODELS, gguf_model_dir, named_model_dir

    path = Path(model_path)
    if (path / "config.json").is_file():
        return path
    if model_path in NAMED_MODELS and not path.exists():
        return named_model_dir(model_path)
    if path.suffix.lower() == ".gguf":
        return gguf_model_dir(path)
    if _HUB_ID.fullmatch(model_path) and not path.exists():
        return _download(model_path, workdir)
    raise FileNotFoundError(
        f"model.path {model_path!r}: no config.json there (a Hugging Face model folder, a Hub id such as "
        f"Qwen/Qwen2.5-0.5B-Instruct, a .gguf file, a built-in model: {', '.join(NAMED_MODELS)}, or `tiny`)"
    )


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def _download(repo_id: str, workdir: Path) -> Path:
    """A Hub model's weights, config and tokenizer, fetched once into workdir (the learner job has no cache)."""
    from huggingface_hub import snapshot_download

    out = workdir / "hub" / repo_id.replace("/", "--")
    try:
        snapshot_download(
            repo_id,
            local_dir=out,
            allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja"],
        )
    except Exception as e:  # noqa: BLE001 (offline, unknown id, gated model: say which and why)
        raise FileNotFoundError(
            f"model.path {repo_id!r}: not a local folder, and downloading it from the Hugging Face Hub failed: "
            f"{type(e).__name__}: {e}"
        ) from e
    if not (out / "config.json").is_file():
        raise FileNotFoundError(f"model.path {repo_id!r}: the Hub repository has no config.json")
    return out


def _token_logprobs(
    hidden: Tensor,
    weight: Tensor,
    targets: Tensor,
    temperature: float,
    chunk: int,
    entropy: bool,
    recompute: bool,
):
    """recompute: the backward recomputes each chunk's logits instead of keeping the forward's log-softmax
    (model/logprobs.py keeps it when it is small): what gradient checkpointing asks of the head too."""
    from ..model.logprobs import token_logprobs

    out = token_logprobs(
        hidden,
        weight,
        targets,
        temperature=temperature,
        chunk_size=chunk,
        return_entropy=entropy,
        **({"save_bytes": 0} if recompute else {}),
    )
    if isinstance(out, tuple):
        return out[0], (out[1] if entropy else None)
    return out, None


def merged_model(cfg: ModelConfig, state: dict[str, torch.Tensor]) -> CausalLM:
    """A plain CausalLM (no adapters) holding `state`, full fp32 weights with LoRA merged in: what is exported."""
    from ..model.modeling import CausalLM

    with torch.device("meta"):
        merged = CausalLM(cfg)
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    merged.load_state_dict(state, strict=not cfg.tie_word_embeddings, assign=True)
    if cfg.tie_word_embeddings:
        merged.lm_head.weight = merged.model.embed_tokens.weight
    merged.inv_freq = cfg.inv_freq()
    return merged.eval()


class Policy:
    """Owns the modules; the trainer owns the optimiser."""

    def __init__(
        self, cfg: LearnerConfig, model_dir: Path, device: torch.device, base: CausalLM | None = None
    ) -> None:
        """base: an already built CausalLM on `device` (benchmarks with random weights); else loaded from model_dir."""
        from ..model.hf_io import load_pretrained

        self.cfg = cfg
        self.model_dir = Path(model_dir)
        self.device = device
        # bf16 is autocast over fp32 master weights where the device has bf16 units, else fp32 (precision.py).
        self.autocast_dtype = autocast_dtype(cfg.dtype, device)
        log.info("%s", describe(cfg.dtype, device))
        self.base: CausalLM = (
            base if base is not None else load_pretrained(self.model_dir, dtype=torch.float32, device=device)
        )
        if cfg.gradient_checkpointing:
            self.base.gradient_checkpointing_enable()
        self.peft = None
        self.reference: CausalLM | None = None
        # With LoRA after a warm start: the warm-started adapter (reference_from_current); None: the base.
        self.reference_adapter: dict[str, Tensor] | None = None
        self._reference_warm_started = False  # full fine-tuning: self.reference holds the warm start
        if cfg.lora_rank is not None:
            from peft import get_peft_model

            lora = lora_config(
                cfg.lora_rank,
                cfg.lora_alpha,
                cfg.lora_dropout,
                cfg.lora_target_modules,
                cfg.lora_layers_to_transform,
            )
            # Injects LoRA layers into self.base in place; self.base.forward_hidden then runs them.
            self.peft = get_peft_model(self.base, lora)
        elif cfg.needs_reference:
            ref_dtype = torch.bfloat16 if self.autocast_dtype is not None else torch.float32
            self.reference = copy.deepcopy(self.base).to(ref_dtype).eval().requires_grad_(False)
        self.value_head: nn.Linear | None = None
        if cfg.adv_estimator == "gae" and not cfg.has_critic:
            self.value_head = nn.Linear(self.base.config.hidden_size, 1).to(device)
            nn.init.zeros_(self.value_head.weight)
            nn.init.zeros_(self.value_head.bias)

    # -- parameters -------------------------------------------------------------------------------------

    def named_trainable_parameters(self) -> list[tuple[str, nn.Parameter]]:
        out = [(n, p) for n, p in self.base.named_parameters() if p.requires_grad]
        if self.value_head is not None:
            out += [(f"value_head.{n}", p) for n, p in self.value_head.named_parameters()]
        return out

    def trainable_state(self, adapter: bool = True) -> dict[str, Tensor]:
        """The weights a checkpoint must hold to restore training exactly (fp32); adapter=False leaves out
        the LoRA adapter (saved on its own in peft's format)."""
        if self.peft is not None and adapter:
            from peft import get_peft_model_state_dict

            state = {f"adapter.{k}": v for k, v in get_peft_model_state_dict(self.peft).items()}
        else:
            state = {}
        if self.value_head is not None:
            state.update({f"value_head.{k}": v for k, v in self.value_head.state_dict().items()})
        return {k: v.detach().to("cpu").contiguous() for k, v in state.items()}

    def load_trainable_state(self, state: dict[str, Tensor]) -> None:
        if self.peft is not None:
            from peft import set_peft_model_state_dict

            adapter = {k.removeprefix("adapter."): v for k, v in state.items() if k.startswith("adapter.")}
            result = set_peft_model_state_dict(self.peft, adapter)
            if getattr(result, "unexpected_keys", None):
                raise ValueError(
                    f"checkpoint adapter does not match the LoRA config: {result.unexpected_keys[:5]}"
                )
        if self.value_head is not None:
            vh = {k.removeprefix("value_head."): v for k, v in state.items() if k.startswith("value_head.")}
            self.value_head.load_state_dict(vh)

    def load_base_weights(self, model_dir: Path) -> None:
        """Replace the full model's weights from a checkpoint folder (full fine-tuning)."""
        from ..model.hf_io import load_state_dict_file

        tensors = load_state_dict_file(model_dir)
        with torch.no_grad():
            params = dict(self.base.named_parameters())
            for name, t in tensors.items():
                if name in params:
                    params[name].copy_(t.to(params[name].dtype))
                elif name != "lm_head.weight":
                    raise ValueError(f"checkpoint tensor {name} is not a parameter of the model")

    # -- forward ----------------------------------------------------------------------------------------

    def _autocast(self):
        return autocast(self.device, self.autocast_dtype)

    def _forward(
        self,
        model: CausalLM,
        mb: MicroBatch,
        *,
        entropy: bool,
        values: bool,
        temperature: float | None = None,
    ) -> ForwardOut:
        temp = self.cfg.temperature if temperature is None else temperature
        with self._autocast():
            hidden = model.forward_hidden(
                mb.input_ids, mb.position_ids, mb.cu_seqlens, mb.max_seqlen, mb.branch
            )  # [T, H]
            rows, targets, index = mb.head_inputs()
            h = hidden.index_select(0, rows)  # [n or distinct pairs, H]
            logprobs, ent = _token_logprobs(
                h,
                model.lm_head_weight(),
                targets,
                temp,
                self.cfg.logprob_chunk_size,
                entropy,
                recompute=self.cfg.gradient_checkpointing,
            )
            # Copies read their first sample's numbers (the gather's backward sums their gradients).
            if index is not None:
                logprobs = logprobs.index_select(0, index)
                ent = None if ent is None else ent.index_select(0, index)
                h = hidden.index_select(0, mb.pred_rows) if values else h
            v = self.value_head(h).squeeze(-1).float() if (values and self.value_head is not None) else None
        return ForwardOut(logprobs.float(), None if ent is None else ent.float(), v)

    def forward(
        self, mb: MicroBatch, *, entropy: bool = True, values: bool = False, temperature: float | None = None
    ) -> ForwardOut:
        """With autograd: the training forward (temperature: the rollout's unless given, e.g. 1 for SFT)."""
        self.base.train()
        return self._forward(self.base, mb, entropy=entropy, values=values, temperature=temperature)

    @torch.no_grad()
    def forward_old(
        self, mb: MicroBatch, *, values: bool = False, temperature: float | None = None
    ) -> ForwardOut:
        """pi_old before the update (no autograd, dropout off)."""
        self.base.eval()
        return self._forward(self.base, mb, entropy=False, values=values, temperature=temperature)

    def _adapter_parameters(self) -> dict[str, nn.Parameter]:
        return {n: p for n, p in self.base.named_parameters() if ".lora_" in n}

    @torch.no_grad()
    def reference_from_current(self) -> None:
        """Make the weights as they are now the reference policy (after a warm start, so that a KL term
        holds the RL stage near the policy it started from, as a verl run started from an SFT checkpoint
        does). With LoRA the reference is a frozen copy of the adapter; else the reference model's weights."""
        if not self.cfg.needs_reference:
            return
        if self.peft is not None:
            self.reference_adapter = {n: p.detach().clone() for n, p in self._adapter_parameters().items()}
            return
        if self.reference is None:
            raise RuntimeError("no reference policy: enable use_kl_loss or use_kl_in_reward")
        for r, b in zip(self.reference.parameters(), self.base.parameters(), strict=True):
            r.copy_(b.detach().to(r.device))
        self._reference_warm_started = True

    @property
    def warm_start_reference(self) -> bool:
        """Whether the reference is the warm-started policy, which a checkpoint must then hold."""
        return self.reference_adapter is not None or self._reference_warm_started

    def reference_tensors(self) -> dict[str, Tensor]:
        """The warm-started reference's weights by name, as held (the adapter, or the reference model's
        parameters, tied ones once), for a checkpoint to save and load in place."""
        if self.reference_adapter is not None:
            return self.reference_adapter
        if self.reference is None or not self._reference_warm_started:
            raise RuntimeError("the reference is the initial model; a checkpoint does not hold it")
        return {n: p.detach() for n, p in self.reference.named_parameters()}

    @torch.no_grad()
    def load_reference_tensors(self, state: dict[str, Tensor]) -> None:
        """Restore a checkpoint's warm-started reference (reference_tensors' names)."""
        if not self.cfg.needs_reference:
            return  # this run has no KL term; the checkpoint's reference is not needed
        self.reference_from_current()  # the holders, then the checkpoint's values into them
        held = self.reference_tensors()
        if set(held) != set(state):
            missing, extra = sorted(set(held) - set(state)), sorted(set(state) - set(held))
            raise ValueError(
                f"the checkpoint's reference policy does not match this model: missing {missing[:3]}, "
                f"unexpected {extra[:3]}"
            )
        for n, t in held.items():
            t.copy_(state[n].to(t.device, t.dtype))

    @contextlib.contextmanager
    def _reference_adapter(self) -> Iterator[None]:
        """The adapter's weights swapped for the reference's while inside (no autograd graph may span it)."""
        ref = self.reference_adapter
        if ref is None:
            raise RuntimeError("no reference adapter")
        params = self._adapter_parameters()
        live = {n: p.detach().clone() for n, p in params.items()}
        try:
            with torch.no_grad():
                for n, p in params.items():
                    p.copy_(ref[n])
            yield
        finally:
            with torch.no_grad():
                for n, p in params.items():
                    p.copy_(live[n])

    @torch.no_grad()
    def reference_logprobs(self, mb: MicroBatch, temperature: float | None = None) -> Tensor:
        """pi_ref: the frozen initial (or warm-started, `reference_from_current`) model; with LoRA the base
        with its adapters disabled, or with the warm start's adapter."""
        t = temperature
        if self.peft is not None:
            self.base.eval()
            ctx = self.peft.disable_adapter() if self.reference_adapter is None else self._reference_adapter()
            with ctx:
                return self._forward(self.base, mb, entropy=False, values=False, temperature=t).logprobs
        if self.reference is None:
            raise RuntimeError("no reference policy: enable use_kl_loss or use_kl_in_reward")
        return self._forward(self.reference, mb, entropy=False, values=False, temperature=t).logprobs

    # -- rollout weights --------------------------------------------------------------------------------

    @torch.no_grad()
    def rollout_model(self) -> CausalLM:
        """A plain CausalLM (CPU, fp32) with the weights rollouts should use: LoRA merged into the base."""
        if self.peft is None:
            return self.base
        state: dict[str, Tensor] = {}
        lora_layers = {}
        from peft.tuners.lora import LoraLayer

        for name, module in self.base.named_modules():
            if isinstance(module, LoraLayer):
                lora_layers[name] = module
        for name, p in self.base.named_parameters():
            if ".lora_" in name:
                continue
            state[name.replace(".base_layer.", ".")] = p.detach().to("cpu", torch.float32)
        for name, module in lora_layers.items():
            weight = module.base_layer.weight.detach().float()
            for a in module.active_adapters:
                weight = weight + module.get_delta_weight(a).float()
            state[f"{name}.weight"] = weight.cpu()
        return merged_model(self.base.config, state)

    @contextlib.contextmanager
    def eval_mode(self) -> Iterator[None]:
        was = self.base.training
        self.base.eval()
        try:
            yield
        finally:
            self.base.train(was)
