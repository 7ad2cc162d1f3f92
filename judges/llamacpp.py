"""llama.cpp's OpenAI-compatible server (llama-cpp-python's `llama_cpp.server`) on a tiny random
Llama written here as GGUF: a model server written by others, for tests and benches.

Nothing is downloaded: `write_tiny_gguf` writes a two-layer Llama with random weights and a
SentencePiece-style vocabulary (every printable ASCII character, the 256 byte-fallback tokens and
some whole words, each reachable by merges of its prefixes) plus a chat template, so the server's
own Jinja chat formatter, tokenizer, sampler, logprobs, JSON-schema grammars and `usage` all run.
Its answers are noise: a judge's parser must say so, or a grammar must hold them to a schema.

One hidden dimension is a constant "prior" channel (the same in every token embedding, never
written by a layer), so the output layer adds a fixed bias to a few tokens: digits, JSON
punctuation and end-of-text, twice as much to the double quote. Answers then end (a random model
without it writes until max_tokens, and a JSON string it opens under a grammar may loop on "9999"
until the cap), and score digits show up among the top logprobs; which digit, and everything else,
stays random.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from config.embedded import free_port

MODEL_NAME = "tiny-random-llama"
CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")
WORDS = ("the a an of to and or is are be in on for with that this it as by from at not no yes score reason "
         "label value response review rating rate criterion answer output item json only one number first line "
         "clear correct good bad very helpful feedback code quality text edit source sentence please give "
         "return your you should will each which what how 1 2 3 4 5 6 7 8 9 10 accept reject true false tp fp1 "
         "fp2 fp3 winner better tie best worst rank").split()
PRIOR_TOKENS = tuple("0123456789{}[]\",:") + ("</s>",)
SPACE = "\u2581"  # SentencePiece's word-boundary mark
# gguf.TokenType values (llama.cpp: NORMAL 1, UNKNOWN 2, CONTROL 3, BYTE 6)
NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6


def tiny_vocab() -> tuple[list[str], list[float], list[int]]:
    """(tokens, scores, types): ids 0-2 are <unk>, <s>, </s>; then bytes, characters, word prefixes."""
    tokens, types = ["<unk>", "<s>", "</s>"], [UNKNOWN, CONTROL, CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [BYTE] * 256
    pieces = [chr(c) for c in range(33, 127)] + [SPACE]
    # SentencePiece merges pairs whose join is in the vocabulary, so every prefix of a word is one too
    for word in WORDS:
        for k in range(1, len(word) + 1):
            pieces.append(SPACE + word[:k])
    seen = set(tokens)
    for p in pieces:
        if p not in seen:
            seen.add(p)
            tokens.append(p)
            types.append(NORMAL)
    scores = [0.0] * 259 + [float(len(t)) for t in tokens[259:]]  # longer merges first
    return tokens, scores, types


def write_tiny_gguf(path: Path, *, seed: int = 0, n_embd: int = 64, n_layer: int = 2, n_head: int = 4,
                    n_head_kv: int = 2, n_ff: int = 128, n_ctx: int = 32768, prior_level: float = 8.0, prior_bias: float = 1.0) -> Path:
    """A random Llama as GGUF (float32) with the vocabulary, chat template and prior above."""
    import gguf
    import numpy as np

    tokens, scores, types = tiny_vocab()
    n_vocab, head_dim = len(tokens), n_embd // n_head
    rng = np.random.default_rng(seed)

    def rand(*shape: int, std: float) -> "np.ndarray":
        return (rng.standard_normal(shape) * std).astype(np.float32)

    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_name(MODEL_NAME)
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)
    # Shapes as PyTorch lays them out (out, in); the writer stores GGML's reversed order.
    embd = rand(n_vocab, n_embd, std=1.0)
    embd[:, 0] = prior_level  # the prior channel: constant, so the bias below is the same at every step
    out = rand(n_vocab, n_embd, std=0.5)
    out[:, 0] = 0.0
    out[[tokens.index(t) for t in PRIOR_TOKENS], 0] = prior_bias
    out[tokens.index('"'), 0] = 2 * prior_bias  # strings close: greedy decoding of noise loops ("99999...") otherwise
    w.add_tensor("token_embd.weight", embd)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor("output.weight", out)
    for i in range(n_layer):
        kv = n_head_kv * head_dim
        attn_out, ffn_down = rand(n_embd, n_embd, std=0.1), rand(n_embd, n_ff, std=0.1)
        attn_out[0, :] = ffn_down[0, :] = 0.0  # no layer writes the prior channel
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", rand(n_embd, n_embd, std=0.1))
        w.add_tensor(f"blk.{i}.attn_k.weight", rand(kv, n_embd, std=0.1))
        w.add_tensor(f"blk.{i}.attn_v.weight", rand(kv, n_embd, std=0.1))
        w.add_tensor(f"blk.{i}.attn_output.weight", attn_out)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", rand(n_ff, n_embd, std=0.1))
        w.add_tensor(f"blk.{i}.ffn_up.weight", rand(n_ff, n_embd, std=0.1))
        w.add_tensor(f"blk.{i}.ffn_down.weight", ffn_down)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def server_version() -> str:
    import llama_cpp

    return llama_cpp.__version__


@dataclass
class LlamaCppServer:
    base_url: str  # .../v1
    model: str
    model_path: Path
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _wait_ready(url: str, process: subprocess.Popen, log_path: Path, timeout_s: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama.cpp server exited ({process.returncode}):\n{log_path.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/models", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"llama.cpp server not ready after {timeout_s}s:\n{log_path.read_text()[-3000:]}")


@contextlib.contextmanager
def running_llamacpp_server(model_path: Path | None = None, *, n_ctx: int = 32768, n_threads: int = 1,
                            seed: int = 0, ready_timeout_s: float = 120.0) -> Iterator[LlamaCppServer]:
    """`python -m llama_cpp.server` on 127.0.0.1 and a free port, stopped (and waited for) on exit.
    Writes the tiny random model to a temporary folder unless `model_path` is given."""
    with tempfile.TemporaryDirectory(prefix="concord-llamacpp-") as tmp:
        path = model_path or write_tiny_gguf(Path(tmp) / "tiny.gguf", seed=seed)
        log_path = Path(tmp) / "server.log"
        port = free_port()
        # --flash_attn: llama.cpp's CPU kernel skips the masked part of the attention, most of a long judge
        # prompt's cost on this model (eight 7.8k-token prompts 17.2 -> 11.5 s of CPU; the suite's
        # tests/judges_thirdparty 70.7 -> 62.0 s, 2026-12-07). Answers stay the random model's.
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--model_alias", MODEL_NAME,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(n_threads),
               "--n_threads_batch", str(n_threads), "--logits_all", "true", "--seed", str(seed),
               "--flash_attn", "true"]
        with open(log_path, "wb") as log:
            process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                       env={**os.environ, "OMP_NUM_THREADS": str(n_threads)})
        base_url = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_ready(base_url, process, log_path, ready_timeout_s)
            yield LlamaCppServer(base_url=base_url, model=MODEL_NAME, model_path=path, process=process,
                                 log_path=log_path)
        finally:
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=15)
            if process.poll() is None:
                process.kill()
                process.wait()
