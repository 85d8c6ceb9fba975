"""The learner preloads jemalloc where it is found (toolrl_learner/allocator.py), and turns it off on request."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolrl_learner import allocator


def _fake_lib(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x7fELF")
    return path


def test_setups_copy_comes_first_and_off_turns_it_off(tmp_path):
    lib = _fake_lib(tmp_path / ".cache/jemalloc/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
    assert allocator.jemalloc_path({}, tmp_path) == str(lib.resolve())
    for off in ("off", "OFF", "0", "glibc"):
        assert allocator.jemalloc_path({allocator.ENV: off}, tmp_path) is None
        assert allocator.preload_env({allocator.ENV: off}, tmp_path) is None


def test_a_named_library_is_used_and_a_missing_one_is_an_error(tmp_path):
    mine = _fake_lib(tmp_path / "elsewhere/libjemalloc.so.2")
    assert allocator.jemalloc_path({allocator.ENV: str(mine)}, tmp_path) == str(mine.resolve())
    with pytest.raises(ValueError, match=r"TOOLRL_JEMALLOC=/no/such/libjemalloc.so.2: no such file"):
        allocator.jemalloc_path({allocator.ENV: "/no/such/libjemalloc.so.2"}, tmp_path)


def test_the_gpu_image_installs_jemalloc_where_the_learner_looks():
    """The image has no setup cache: its jemalloc is Debian/Ubuntu's package, in a folder the learner searches."""
    dockerfile = (Path(allocator.__file__).resolve().parents[1] / "Dockerfile").read_text()
    installs = [line for line in dockerfile.splitlines() if "apt-get install" in line]
    assert any("libjemalloc2" in line.split() for line in installs), installs
    assert "/usr/lib/x86_64-linux-gnu" in allocator._SYSTEM_DIRS


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_PRELOAD is the Linux loader's")
def test_the_preload_goes_first_and_happens_once(tmp_path):
    lib = str(_fake_lib(tmp_path / ".cache/jemalloc/usr/lib/aarch64-linux-gnu/libjemalloc.so.2").resolve())
    env = allocator.preload_env({"LD_PRELOAD": "/opt/libother.so", "KEEP": "1"}, tmp_path)
    assert env == {"LD_PRELOAD": f"{lib}:/opt/libother.so", "KEEP": "1", allocator.DONE: lib}
    # Re-executed once already (even if the loader ignored the preload), or jemalloc preloaded by the user: no more.
    assert allocator.preload_env(env, tmp_path) is None
    assert allocator.preload_env({"LD_PRELOAD": "/usr/lib/libjemalloc.so.2"}, tmp_path) is None


_PROBE = (
    "from toolrl_learner import allocator\n"
    "allocator.reexec_with_jemalloc()\n"
    "from toolrl_learner.train import host_memory\n"
    "print(allocator.jemalloc_loaded(), host_memory.release_free_pages())\n"
)
_GPU_WORKER = Path(__file__).resolve().parents[1]


@pytest.fixture
def jemalloc() -> tuple[str, dict[str, str]]:
    """The jemalloc this machine's lookup finds, and this process's environment without any allocator setting."""
    lib = allocator.jemalloc_path({k: v for k, v in os.environ.items() if k != allocator.ENV})
    if lib is None:
        pytest.skip("no jemalloc on this machine (npm run setup unpacks Debian's libjemalloc2 into .cache)")
    base = {k: v for k, v in os.environ.items() if k not in (allocator.ENV, allocator.DONE, "LD_PRELOAD")}
    return lib, base


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=_GPU_WORKER, capture_output=True, text=True, timeout=120
    )


def _probe(env: dict[str, str]) -> str:
    out = _run(["-c", _PROBE], env)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_process_reexecutes_with_jemalloc_serving_malloc(jemalloc):
    lib, base = jemalloc
    # jemalloc mapped in, and the glibc heap trimming (train/host_memory.py) then does nothing.
    assert _probe({**base, allocator.ENV: lib}) == "True False"
    assert _probe({**base, allocator.ENV: "off"}) == "False True"


def test_the_training_commands_say_which_malloc_they_run_on(jemalloc):
    lib, base = jemalloc
    cmd = ["-m", "toolrl_learner", "offline", "--help"]
    on = _run(cmd, {**base, allocator.ENV: lib})
    assert on.returncode == 0 and f"toolrl_learner: malloc is jemalloc ({lib})" in on.stderr
    off = _run(cmd, {**base, allocator.ENV: "off"})
    assert off.returncode == 0 and "jemalloc" not in off.stderr
    # A jemalloc the caller preloaded is used as it is (no second preload, no re-execution) and named as theirs.
    theirs = _run(cmd, {**base, "LD_PRELOAD": lib})
    assert (
        theirs.returncode == 0
        and "toolrl_learner: malloc is jemalloc (preloaded by LD_PRELOAD)" in theirs.stderr
    )
    bad = _run(cmd, {**base, allocator.ENV: "/no/such.so"})
    assert bad.returncode == 2 and "TOOLRL_JEMALLOC=/no/such.so: no such file" in bad.stderr
