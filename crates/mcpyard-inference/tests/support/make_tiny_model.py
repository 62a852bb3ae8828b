"""Writes a tiny random-weight LLaMA-architecture GGUF model (about 0.5 MB).

Its output is gibberish, but a real llama.cpp-based server loads and serves
it: chat (ChatML template), tool calls constrained by a grammar, and mean-
pooled embeddings. Usage: python make_tiny_model.py OUT.gguf
"""

import sys

import gguf
import numpy as np

EMBD = 64
HEADS = 2
HEADS_KV = 2
FFN = 128
LAYERS = 2
CTX = 2048

CHATML = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

WORDS = ["the", "a", "hello", "world", "is", "of", "and", "to", "in", "it",
         "you", "that", "weather", "city", "Paris", "name", "true", "false"]


def vocab():
    T = gguf.TokenType
    tokens, scores, types = [], [], []

    def add(text, score, kind):
        tokens.append(text.encode("utf-8"))
        scores.append(float(score))
        types.append(int(kind))

    add("<unk>", 0.0, T.UNKNOWN)
    add("<s>", 0.0, T.CONTROL)
    add("</s>", 0.0, T.CONTROL)
    for b in range(256):
        add(f"<0x{b:02X}>", 0.0, T.BYTE)
    add("\u2581", -1.0, T.NORMAL)
    for c in range(33, 127):
        add(chr(c), -2.0, T.NORMAL)
    for i, w in enumerate(WORDS):
        add("\u2581" + w, -3.0 - i * 0.01, T.NORMAL)
    add("<|im_start|>", 0.0, T.CONTROL)
    add("<|im_end|>", 0.0, T.CONTROL)
    return tokens, scores, types


def main(path):
    rng = np.random.default_rng(0)

    def rand(*shape):
        return rng.normal(0.0, 0.02, size=shape).astype(np.float32)

    tokens, scores, types = vocab()
    n_vocab = len(tokens)
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("mcpyard-tiny-random")
    w.add_context_length(CTX)
    w.add_embedding_length(EMBD)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(HEADS_KV)
    w.add_rope_dimension_count(EMBD // HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(CHATML)

    head_dim = EMBD // HEADS
    w.add_tensor("token_embd.weight", rand(n_vocab, EMBD))
    for i in range(LAYERS):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(EMBD, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", rand(EMBD, EMBD))
        w.add_tensor(p + "attn_k.weight", rand(HEADS_KV * head_dim, EMBD))
        w.add_tensor(p + "attn_v.weight", rand(HEADS_KV * head_dim, EMBD))
        w.add_tensor(p + "attn_output.weight", rand(EMBD, EMBD))
        w.add_tensor(p + "ffn_norm.weight", np.ones(EMBD, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", rand(FFN, EMBD))
        w.add_tensor(p + "ffn_up.weight", rand(FFN, EMBD))
        w.add_tensor(p + "ffn_down.weight", rand(EMBD, FFN))
    w.add_tensor("output_norm.weight", np.ones(EMBD, dtype=np.float32))
    w.add_tensor("output.weight", rand(n_vocab, EMBD))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_tiny_model.py OUT.gguf")
    main(sys.argv[1])
