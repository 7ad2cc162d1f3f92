"""A tiny Llama built from a config on disk (random weights), with a word-level tokenizer."""
from __future__ import annotations

from pathlib import Path

WORDS = ("rate the response from 1 to 5 score is good bad answer question please give a number only "
         "user assistant system : . , ? ! human review feedback clear helpful").split()


def build_tiny_llama(path: Path, chat_template: bool = True, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<s>", "</s>", "<unk>"]
    vocab = {t: i for i, t in enumerate(specials + [str(d) for d in range(10)] + WORDS)}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>")
    if chat_template:
        fast.chat_template = ("{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} . {% endfor %}"
                              "{% if add_generation_prompt %}assistant : {% endif %}")
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path
