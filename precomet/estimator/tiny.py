"""A tiny random-init XLM-R encoder with a WordPiece tokenizer trained from scratch — for tests and
smoke runs, built fully offline (never a hub download). Predictions from it are meaningless."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

SPECIAL = ["<pad>", "<unk>", "<s>", "</s>", "<mask>"]


def build_tiny_encoder(
    out_dir: str | Path,
    *,
    texts: Iterable[str],
    hidden_size: int = 32,
    layers: int = 2,
    vocab_size: int = 500,
    seed: int = 0,
) -> Path:
    """Train a WordPiece tokenizer on ``texts``, random-initialise an XLM-R config of ``layers`` × ``hidden_size``
    and ``save_pretrained`` both into ``out_dir`` (safetensors). Returns ``out_dir``."""
    import torch
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaModel

    out_dir = Path(out_dir)
    tok = Tokenizer(models.WordPiece(unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(list(texts), trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> $B </s>", special_tokens=[("<s>", 2), ("</s>", 3)]
    )
    tok.decoder = decoders.WordPiece()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        cls_token="<s>",
        sep_token="</s>",
        mask_token="<mask>",
        model_max_length=128,
    )
    config = XLMRobertaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=130,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    with torch.random.fork_rng(devices=[]):  # seeds the weights without touching the caller's generator
        torch.manual_seed(seed)
        model = XLMRobertaModel(config, add_pooling_layer=False)
    model.save_pretrained(out_dir, safe_serialization=True)
    fast.save_pretrained(out_dir)
    return out_dir
