"""Local-model judging throughput on a CUDA machine (not part of `make bench`).

Builds Llama-shaped models of real sizes from configs (random weights, bf16, SDPA attention;
nothing is downloaded) and a byte-level BPE tokenizer trained on the spot, loads ONE copy of
the weights per size, and measures the transformers backend in logprob mode (G-Eval: one
forward pass per prompt) per batch size, generate mode beside it, and a naive one-prompt loop.
For each: items/s, prompt tokens/s, the fraction of the prefill bound (peak FLOP/s ÷ (2 ×
parameters), in tokens/s; peak both measured by a large bf16 matmul and as the data sheet
gives it), and peak GPU memory. Prints JSON and writes bench/results/gpu_judge_throughput.json.

    python bench/gpu_judge_throughput.py [--sizes 1b 8b] [--batch-sizes 32 64 128] [--items 512]
                                         [--max-batch-tokens 65536] [--compile] [--tiny]

--tiny uses a 2-layer model so the script can be checked on a CPU.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judges.backends.base import JudgeRequest  # noqa: E402
from judges.backends.transformers_local import TransformersBackend  # noqa: E402
from judges.prompts import build_criterion  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "gpu_judge_throughput.json"
RUBRIC = {
    "slug": "gpu", "name": "GPU bench", "instructions": "Judge the response for helpfulness and accuracy. " * 30,
    "criteria": [{"key": "q", "name": "Quality", "kind": "likert", "min": 1, "max": 5,
                  "levels": [{"value": v, "label": str(v), "description": f"quality level {v}"} for v in range(1, 6)]}],
}
CHAT_TEMPLATE = ("{% for m in messages %}<|start|>{{ m['role'] }}\n{{ m['content'] }}<|end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|start|>assistant\n{% endif %}")
SHAPES = {  # Llama-3.x shapes
    "tiny": dict(vocab_size=8000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2),
    "1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
               num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=True),
    "8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=8),
}
DATASHEET_TFLOPS = {"H100": 989.4, "H200": 989.4, "A100": 312.0}  # dense bf16


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [f"Question {i}: explain the result of experiment {i}. The answer follows from the data and the "
              f"rubric; score it from 1 to 5. Judge the response for helpfulness and accuracy." for i in range(2000)]
    tk = Tokenizer(models.BPE(unk_token=None))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=8000, special_tokens=["<pad>", "<s>", "</s>",
                                                                                        "<|start|>", "<|end|>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    tok.chat_template = CHAT_TEMPLATE
    return tok


def build_model(size: str, compile_: bool):
    """One copy of the weights, on the GPU when there is one."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(**SHAPES[size], max_position_embeddings=8192, rope_theta=500000.0,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0, attn_implementation="sdpa")
    cuda = torch.cuda.is_available()
    with torch.device("cuda" if cuda else "cpu"):
        torch.set_default_dtype(torch.bfloat16 if cuda else torch.float32)
        model = LlamaForCausalLM(cfg)
        torch.set_default_dtype(torch.float32)
    if compile_:
        model.forward = torch.compile(model.forward, dynamic=True)
    params = sum(p.numel() for p in model.parameters())
    return model, params


def make_requests(n: int, mode: str, max_tokens: int) -> list[JudgeRequest]:
    reqs = []
    for i in range(n):
        item = {"id": str(i), "context": f"Question {i}: explain the result.",
                "outputs": [{"content": f"Answer {i}. " + "The result follows from the data. " * (5 + i % 20)}]}
        p = build_criterion(RUBRIC, "q", item, 0)
        kw = dict(mode="logprob", allowed_tokens=tuple("12345"), top_logprobs=5) if mode == "logprob" else \
            dict(max_tokens=max_tokens)
        reqs.append(JudgeRequest(messages=p.messages, **kw))
    return reqs


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(backend: TransformersBackend, reqs: list[JudgeRequest]) -> dict:
    import torch

    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    _sync()
    t0 = time.perf_counter()
    out = asyncio.run(backend.score_many(reqs))
    _sync()
    dt = time.perf_counter() - t0
    ok = [o for o in out if hasattr(o, "texts")]
    tokens = sum(o.input_tokens for o in ok)
    return {"items": len(ok), "seconds": dt, "items_per_s": len(ok) / dt, "prompt_tokens_per_s": tokens / dt,
            "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None}


def measured_peak_tflops() -> float | None:
    """bf16 matmul throughput of this GPU (what the forward pass could reach at best)."""
    import torch

    if not torch.cuda.is_available():
        return None
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    _sync()
    t0, n = time.perf_counter(), 20
    for _ in range(n):
        a @ b
    _sync()
    return 2 * 8192 ** 3 * n / (time.perf_counter() - t0) / 1e12


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["1b", "8b"])
    ap.add_argument("--batch-sizes", nargs="+", type=int, default=[32, 64, 128])
    ap.add_argument("--items", type=int, default=512)
    ap.add_argument("--naive-items", type=int, default=32)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--max-batch-tokens", type=int, default=None)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--tiny", action="store_true", help="a 2-layer model, to check the script on a CPU")
    args = ap.parse_args()
    import torch

    sizes = ["tiny"] if args.tiny else args.sizes
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    measured = measured_peak_tflops()
    sheet = next((v for k, v in DATASHEET_TFLOPS.items() if k in device), None)
    tok = build_tokenizer()
    report = {"device": device, "measured_bf16_matmul_tflops": measured, "datasheet_bf16_tflops": sheet,
              "compile": args.compile, "max_batch_tokens": args.max_batch_tokens, "models": []}
    for size in sizes:
        model, params = build_model(size, args.compile)
        entry = {"size": size, "parameters": params, "logprob": []}

        def fraction(tps: float) -> dict:
            return {f"fraction_of_prefill_bound_{name}": tps / (peak * 1e12 / (2 * params))
                    for name, peak in (("measured", measured), ("datasheet", sheet)) if peak}

        for bs in args.batch_sizes:
            backend = TransformersBackend(f"in-memory-{size}", batch_size=bs, max_batch_tokens=args.max_batch_tokens)
            backend.adopt(model, tok)
            timed(backend, make_requests(min(2 * bs, args.items), "logprob", 1))  # warm-up (and compile)
            got = timed(backend, make_requests(args.items, "logprob", 1))
            entry["logprob"].append({"batch_size": bs, **got, **fraction(got["prompt_tokens_per_s"])})
        best = max(args.batch_sizes)
        backend = TransformersBackend(f"in-memory-{size}", batch_size=best)
        backend.adopt(model, tok)
        entry["generate"] = {"batch_size": best, "max_new_tokens": args.max_new_tokens,
                             **timed(backend, make_requests(min(args.items, 4 * best), "generate", args.max_new_tokens))}
        single = TransformersBackend(f"in-memory-{size}", batch_size=1)
        single.adopt(model, tok)  # the same weights: one copy in memory
        entry["naive_one_prompt_logprob"] = timed(single, make_requests(args.naive_items, "logprob", 1))
        sample = make_requests(64, "logprob", 1)
        entry["mean_prompt_tokens"] = sum(len(tok(backend.render(r)[0], add_special_tokens=False)["input_ids"])
                                          for r in sample) / len(sample)
        report["models"].append(entry)
        del model, backend, single
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    text = json.dumps(report, indent=2)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text + "\n")


if __name__ == "__main__":
    main()
