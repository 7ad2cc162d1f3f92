"""Local-model judging throughput on a CUDA machine (not part of `make bench`).

Builds a Llama-like model of a real size from a config (random weights, nothing is
downloaded) and a byte-level BPE tokenizer trained on the spot, then measures items/s of
the transformers backend in logprob mode (G-Eval, one forward pass), in generate mode,
and of a naive one-prompt-at-a-time generate loop. Prints JSON.

    python bench/gpu_judge_throughput.py [--items 512] [--batch-size 32] [--tiny]

--tiny uses a 2-layer model so the script can be checked on a CPU.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judges.backends.base import JudgeRequest  # noqa: E402
from judges.backends.transformers_local import TransformersBackend  # noqa: E402
from judges.prompts import build_criterion  # noqa: E402

RUBRIC = {
    "slug": "gpu", "name": "GPU bench", "instructions": "Judge the response for helpfulness and accuracy. " * 30,
    "criteria": [{"key": "q", "name": "Quality", "kind": "likert", "min": 1, "max": 5,
                  "levels": [{"value": v, "label": str(v), "description": f"quality level {v}"} for v in range(1, 6)]}],
}
CHAT_TEMPLATE = ("{% for m in messages %}<|start|>{{ m['role'] }}\n{{ m['content'] }}<|end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|start|>assistant\n{% endif %}")


def build_model(path: Path, tiny: bool) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

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
    if tiny:
        cfg = LlamaConfig(vocab_size=8000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048)
    else:  # Llama-3.2-1B-like shape
        cfg = LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                          num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
                          rope_theta=500000.0, tie_word_embeddings=True)
    cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id = 1, 2, 0
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16 if torch.cuda.is_available() else torch.float32)
    model.save_pretrained(path)
    tok.save_pretrained(path)


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


def timed(backend: TransformersBackend, reqs: list[JudgeRequest]) -> tuple[float, int]:
    t0 = time.perf_counter()
    out = asyncio.run(backend.score_many(reqs))
    _sync()
    return time.perf_counter() - t0, sum(1 for o in out if hasattr(o, "texts"))


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=512)
    ap.add_argument("--naive-items", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args()
    import torch

    with tempfile.TemporaryDirectory() as d:
        path = Path(d)
        build_model(path, args.tiny)
        dtype = "bfloat16" if torch.cuda.is_available() else None
        batched = TransformersBackend(str(path), batch_size=args.batch_size, dtype=dtype)
        single = TransformersBackend(str(path), batch_size=1, dtype=dtype)
        timed(batched, make_requests(min(8, args.items), "logprob", 1))  # load + warm-up
        timed(single, make_requests(2, "generate", 4))
        t_lp, ok_lp = timed(batched, make_requests(args.items, "logprob", 1))
        t_gen, ok_gen = timed(batched, make_requests(args.items, "generate", args.max_new_tokens))
        t_naive, ok_naive = timed(single, make_requests(args.naive_items, "generate", args.max_new_tokens))
        sample = make_requests(min(64, args.items), "logprob", 1)
        prompt_tokens = sum(len(batched._tok(batched.render(r)[0], add_special_tokens=False)["input_ids"])
                            for r in sample) / len(sample)
    print(json.dumps({
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "model": "tiny" if args.tiny else "llama-1b-like (random weights, bf16)",
        "mean_prompt_tokens": round(prompt_tokens, 1), "batch_size": args.batch_size,
        "max_new_tokens": args.max_new_tokens,
        "logprob_items_per_s": ok_lp / t_lp,
        "generate_items_per_s": ok_gen / t_gen,
        "naive_one_at_a_time_generate_items_per_s": ok_naive / t_naive,
        "generate_speedup_over_naive": (ok_gen / t_gen) / (ok_naive / t_naive),
    }, indent=2))


if __name__ == "__main__":
    main()
