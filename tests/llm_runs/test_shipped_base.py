"""The base shipped with the package: named by today's cache key of the default settings,
installed into an empty cache instead of pretraining, and (slow) what pretraining makes."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from safetensors.torch import load_file  # noqa: E402

from llm_runs import _base_model as bm  # noqa: E402
from llm_runs import get_task  # noqa: E402


def _default_entry() -> str:
    """The cache folder name of the tiny math base at the default pretraining settings."""
    steps = int(bm.BASE_PRESETS["tiny"]["steps"])
    return bm.cache_path(get_task("math"), "/c", "tiny", steps, 64, 3e-3).name


def test_the_shipped_base_is_the_default_math_base_of_todays_task():
    """A changed math task (or pretraining default) changes the key: then this fails until
    the base is pretrained again and shipped under its new name."""
    shipped = bm.shipped_base(_default_entry())
    assert shipped is not None, f"no shipped base {_default_entry()} in {bm.SHIPPED_BASES}"
    meta = json.loads((shipped / "agentmotifs_base.json").read_text())
    assert (meta["preset"], meta["task"], meta["threads"]) == ("tiny", "math", 1)
    assert bm.shipped_base("base-tiny-math-0000000000") is None


def test_an_empty_cache_gets_the_shipped_base_without_pretraining(tmp_path, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("pretrained although the base is shipped")

    monkeypatch.setattr(bm, "pretrain_base", refuse)
    base = bm.get_base(get_task("math"), preset="tiny", cache=tmp_path)
    assert base.path == tmp_path / _default_entry()
    assert sorted(p.name for p in tmp_path.iterdir()) == [_default_entry()]  # no temp left
    shipped = load_file(str(bm.shipped_base(_default_entry()) / "model.safetensors"))
    got = base.model.state_dict()
    for k, v in shipped.items():
        assert torch.equal(got[k], v), k
    # another settings' base is not shipped: pretrained as before
    with pytest.raises(AssertionError, match="pretrained although"):
        bm.get_base(get_task("math"), preset="tiny", cache=tmp_path, steps=7)


@pytest.mark.slow
def test_pretraining_reproduces_the_shipped_base_weight_for_weight(tmp_path):
    """The shipped base is what ``pretrain_base`` makes at its settings (one CPU thread,
    6-16 min): no weight differs."""
    shipped = bm.shipped_base(_default_entry())
    assert shipped is not None
    out = bm.pretrain_base(get_task("math"), tmp_path / "again", preset="tiny")
    a = load_file(str(out / "model.safetensors"))
    b = load_file(str(shipped / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    tok = "char_tokenizer.json"
    assert (out / tok).read_text() == (shipped / tok).read_text()
