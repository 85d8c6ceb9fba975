"""The memory planner: its parameter counts are the model's (full, tied, LoRA), it refuses a 7B full fine-tune on
one 24 GB GPU and accepts it on 8 x 80 GB with FSDP, the learner refuses at start (before reading any weight) a
model that cannot fit, a preset bundle written tensor by tensor has the layout of the model-folder export, and the
CPU's per-token activation bytes (fp32 and bf16) are what autograd saves."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hang import HANG_S

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.config import ModelConfig
from toolrl_learner.model.modeling import CausalLM
from toolrl_learner.model.tiny import PRESETS, TinySpec, build_tiny
from toolrl_learner.plan.memory import GB, DoesNotFit, lora_parameters, parameter_counts, plan_memory
from toolrl_learner.plan.shapes import model_shape
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.policy import Policy
from toolrl_learner.train.session import LearnerSession

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_7B = REPO / "examples" / "quickstart" / "run-qwen2.5-7b-8gpu.yaml"


def _count(model) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())  # tied weights once


@pytest.mark.parametrize(
    "name", ["Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct"]
)
def test_parameter_counts_are_the_models_on_cpu(name):
    shape = model_shape(name)
    with torch.device("meta"):
        model = CausalLM(shape)
    assert parameter_counts(shape)["total"] == _count(model)


@pytest.mark.parametrize(
    "spec", [TinySpec(), TinySpec(num_kv_heads=4), TinySpec(arch="llama"), TinySpec(arch="qwen3")]
)
def test_the_planners_tiny_shape_is_the_built_models_on_cpu(tmp_path, spec):
    # One definition of the shape (model/tiny.py spec_shape): a tiny llama is untied, as built.
    from toolrl_learner.model.tiny import spec_shape

    built = ModelConfig.from_file(build_tiny(tmp_path / "m", spec))
    assert spec_shape(spec) == built
    assert built.tie_word_embeddings == (spec.arch != "llama")


def test_model_path_tiny_variants_plan_as_built_on_cpu(tmp_path):
    from toolrl_learner.train.policy import resolve_model_dir

    for path in ("tiny", "tiny:mha"):
        assert model_shape(path) == ModelConfig.from_file(resolve_model_dir(path, tmp_path))


def test_the_built_in_model_plans_from_its_converted_folder_or_before_it_is_installed_on_cpu(
    tmp_path, monkeypatch
):
    # `model.path: smollm2-135m-instruct` (examples/smollm2/run.yaml) names the model store's folder, not a path.
    from toolrl_learner.model.model_store import NAMED_MODELS
    from toolrl_learner.plan.shapes import KNOWN, _known_key

    # every built-in model plans before it is installed: its Hub id has a released shape
    assert all(_known_key(m.hub_id) in KNOWN for m in NAMED_MODELS.values())
    name = "smollm2-135m-instruct"
    monkeypatch.setenv("TOOLRL_MODEL_CACHE", str(tmp_path))
    before = model_shape(name)  # not installed in this cache: the released shape
    with torch.device("meta"):  # SmolLM2-135M-Instruct's 134.5M weights, the tied head once
        assert _count(CausalLM(before)) == 134_515_008
    assert (before.vocab_size, before.tie_word_embeddings, before.head_dim) == (49152, True, 64)
    (tmp_path / name).mkdir()
    (tmp_path / name / "config.json").write_text(json.dumps({**before.to_hf(), "num_hidden_layers": 2}))
    assert model_shape(name).num_hidden_layers == 2  # converted: the folder's config.json, read as it is
    with pytest.raises(ValueError, match=r"model\.path 'm\.gguf': .* model convert m\.gguf"):
        model_shape("m.gguf")


def test_lora_parameters_are_what_peft_trains_on_cpu(tmp_path):
    tiny = build_tiny(tmp_path / "tiny", TinySpec(hidden_size=32, num_layers=2, num_heads=2, num_kv_heads=1))
    cfg = LearnerConfig(
        model_path=str(tiny),
        dtype="fp32",
        lora_rank=4,
        lora_alpha=8,
        lora_target_modules=("q_proj", "down_proj"),
    )
    policy = Policy(cfg, tiny, torch.device("cpu"))
    trained = sum(p.numel() for _, p in policy.named_trainable_parameters())
    assert lora_parameters(ModelConfig.from_file(tiny), 4, cfg.lora_target_modules) == trained


def test_seven_billion_full_fine_tuning_is_refused_on_one_24gb_gpu_and_fits_8x80gb_on_cpu():
    def plan(*flags):
        cmd = [sys.executable, "-m", "toolrl_learner", "plan", str(EXAMPLE_7B), *flags]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=HANG_S)

    one = plan("--gpus", "1", "--gpu-memory-gb", "24")
    assert one.returncode == 3, one.stderr
    # 16 bytes a parameter (fp32 weights, gradients, two AdamW moments) of 7.62B is 122 GB before activations
    assert "7.62B parameters" in one.stdout and "does NOT fit" in one.stdout
    assert "of 24.0 GB: optimizer 60.9" in one.stdout and "more GPUs" in one.stdout
    eight = plan("--gpus", "8", "--gpu-memory-gb", "80", "--json")
    assert eight.returncode == 0, eight.stderr
    p = json.loads(eight.stdout)
    assert p["fits"] is True and p["gpus"] == 8 and p["totalGb"] < 80
    # sharded 8 ways: an eighth of the 122 GB of training state on each GPU
    assert p["partsGb"]["weights"] + p["partsGb"]["gradients"] + p["partsGb"]["optimizer"] == pytest.approx(
        16 * 7.615616512 / 8, rel=1e-3
    )


def test_gradient_checkpointing_cpu_offload_and_lora_shrink_what_they_should_on_cpu():
    shape = model_shape("Qwen/Qwen2.5-7B-Instruct")
    base = LearnerConfig(model_path="x", micro_batch_tokens=8192)
    full = plan_memory(shape, base, gpus=8)
    ckpt = plan_memory(shape, base.replace(gradient_checkpointing=True), gpus=8)
    offload = plan_memory(shape, base.replace(cpu_offload=True), gpus=8)
    lora = plan_memory(shape, base.replace(lora_rank=64, lora_alpha=128), gpus=1)
    # without checkpointing every layer keeps its activations: 28 layers x 8192 tokens x ~225 KB
    assert full.parts["activations"] / GB == pytest.approx(52.3, abs=0.5)
    assert ckpt.parts["activations"] < full.parts["activations"] / 10
    assert offload.parts["weights"] == offload.parts.get("optimizer", 0) == 0
    assert offload.host["optimizer"] == full.parts["optimizer"]
    # LoRA r=64 on the 7 projections: 28 layers x 64 x (in + out) summed, q 7168 + k 4096 + v 4096 + o 7168
    # + gate 22528 + up 22528 + down 22528 = 90112 -> 161,480,704 parameters, 8 bytes of AdamW state each
    assert lora.parts["optimizer"] == 8 * 161_480_704


def test_the_learner_refuses_at_start_a_model_that_cannot_fit_with_the_numbers_on_cpu(tmp_path):
    # A model folder with a config.json only: the refusal must come before any weight is read.
    huge = {**PRESETS["qwen2.5-0.5b"], "hidden_size": 65536, "intermediate_size": 262144, "num_layers": 200}
    folder = tmp_path / "huge"
    folder.mkdir()
    cfg = ModelConfig.from_hf({
        "model_type": "qwen2", "hidden_size": huge["hidden_size"], "intermediate_size": huge["intermediate_size"],
        "num_hidden_layers": huge["num_layers"], "num_attention_heads": 64, "num_key_value_heads": 8,
        "vocab_size": huge["vocab_size"], "tie_word_embeddings": False,
    })  # fmt: skip
    (folder / "config.json").write_text(json.dumps(cfg.to_hf()))
    run = tmp_path / "runs" / "r-plan"
    run.mkdir(parents=True)
    config = {"model": {"path": str(folder), "dtype": "fp32"}, "data": {"train": "t.parquet"}}
    (run / "run.json").write_text(json.dumps({"config": config}))
    session = LearnerSession(FolderBlobStore(tmp_path), "r-plan", emit=lambda e: None, device="cpu")
    with pytest.raises(DoesNotFit, match=r"the learner does not fit: it needs [\d.]+ GB on CPU of [\d.]+ GB: "
                       r"optimizer [\d.]+, .*To fit: LoRA"):  # fmt: skip
        session.start()


def test_a_preset_bundle_written_tensor_by_tensor_has_the_model_folder_exports_layout_on_cpu(
    tmp_path, monkeypatch
):
    from toolrl_learner.export.bundle import export_bundle
    from toolrl_learner.export.random_bundle import RandomState, export_random_bundle

    # A small preset (the real vocabulary, one narrow layer) stands in for 3B, whose model folder is 12 GB.
    monkeypatch.setitem(PRESETS, "test-small", {**PRESETS["qwen2.5-0.5b"], "hidden_size": 64,
                                                "intermediate_size": 128, "num_layers": 1, "num_heads": 2})  # fmt: skip
    streamed = export_random_bundle("test-small", tmp_path / "streamed", "int4", block_size=32)
    folder = build_tiny(tmp_path / "model", TinySpec.from_preset("test-small"))
    exported = export_bundle(folder, tmp_path / "exported", 0, "int4", block_size=32)
    assert streamed["layoutHash"] == exported["layoutHash"]
    assert streamed["files"].keys() == exported["files"].keys()
    # the same tensor whenever it is read (a tied embedding is read for the Gather and for the LM head)
    state = RandomState({"model.embed_tokens.weight": torch.Size([8, 4])}, seed=0, std=0.02)
    assert torch.equal(state["model.embed_tokens.weight"], state["model.embed_tokens.weight"])


@pytest.mark.parametrize("cpu_bf16", [False, True])
def test_cpu_activation_bytes_are_what_autograd_saves_on_cpu(cpu_bf16, monkeypatch):
    # What one layer's forward keeps for its backward, counted by autograd's saved-tensor hooks (sizes and dtypes,
    # not timings: the same on any CPU), against the plan's per-token bytes for the CPU in fp32 and in bf16.
    from toolrl_learner.model.modeling import init_weights, skip_init
    from toolrl_learner.plan.memory import activation_bytes_per_token_layer
    from toolrl_learner.train import precision
    from toolrl_learner.train.batch import LearnerBatch
    from toolrl_learner.train.packing import pack_batch
    from toolrl_learner.train.synthetic import group, trajectory

    monkeypatch.setattr(precision, "cpu_bf16_unit", lambda: "AVX512-BF16" if cpu_bf16 else None)
    shape = ModelConfig.from_hf(
        {"model_type": "llama", "hidden_size": 192, "intermediate_size": 512, "num_hidden_layers": 1,
         "num_attention_heads": 3, "num_key_value_heads": 1, "vocab_size": 512, "tie_word_embeddings": True}
    )  # fmt: skip
    with skip_init():
        model = CausalLM(shape)
    init_weights(model, 0)
    policy = Policy(LearnerConfig(model_path="x", dtype="bf16"), Path("."), torch.device("cpu"), base=model)
    assert (policy.autocast_dtype is not None) == cpu_bf16
    trajs = [
        trajectory(list(range(100 * i, 100 * i + 60)), [list(range(10, 70))], float(i % 2)) for i in range(2)
    ]
    mb = pack_batch(LearnerBatch.from_groups([group("r", "e0-p0", trajs)], 0), 1024)[0]
    layer = model.model.layers[0]
    storages: dict[int, int] = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    hidden = torch.randn(mb.num_tokens, shape.hidden_size, requires_grad=True)
    cos, sin = torch.ones(mb.num_tokens, shape.head_dim), torch.zeros(mb.num_tokens, shape.head_dim)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), policy._autocast():
        layer(hidden, cos, sin, mb.cu_seqlens, mb.max_seqlen, "auto", None, mb.position_ids)
    weights_bf16 = 2 * parameter_counts(shape)["layer"] if cpu_bf16 else 0  # autocast's casts of the weights
    saved = sum(n for ptr, n in storages.items() if ptr not in params) - weights_bf16
    planned = activation_bytes_per_token_layer(shape, "cpu_bf16" if cpu_bf16 else "cpu") * mb.num_tokens
    assert saved == pytest.approx(planned, rel=0.15)
    plan = plan_memory(shape, LearnerConfig(model_path="x", dtype="bf16"), device="cpu", cpu_bf16=cpu_bf16)
    assert ("bf16 cache" in plan.parts) == cpu_bf16
