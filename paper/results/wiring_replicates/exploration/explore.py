"""Read after paper/wiring_readout.py's runs, before this study's design: how the se of an
elpd difference would read that study's 8 sets (4 runs, one per condition) by run and agent,
unstratified and stratified by agent, and where the evidence against the types of another
sign sits. From the PSIS-LOO of each saved fit (``posterior.nc``, not committed: fits
outside a set's indistinguishable set keep no pointwise log-likelihood and are left out).

Usage: python -m paper.results.wiring_replicates.exploration.explore  (writes explore.json)
"""

import json
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[4]
from calibrate import ELPD_BAND  # noqa: E402
from paper._wiring_threshold import pointwise_loo  # noqa: E402
from simulate.spec import ffl_spec  # noqa: E402

warnings.filterwarnings("ignore")


def signs(label):
    m, g = label.split("-")
    return {f"{e.source}->{e.target}": "+" if e.sign > 0 else "-" for e in ffl_spec(m, g).edges}


def se_of(diff, runs, agents, how):
    blocks = np.char.add(np.char.add(runs.astype(str), "/"), agents.astype(str))
    u, inv = np.unique(blocks, return_inverse=True)
    per = np.bincount(inv, weights=diff)
    if how == "blocks":
        return np.sqrt(per.size * per.var())
    ag = np.array([b.split("/")[1] for b in u])  # stratified by agent, unbiased variances
    return np.sqrt(sum((ag == a).sum() * per[ag == a].var(ddof=1) for a in np.unique(ag)))


out = {"sets": {}, "evidence": []}
base = ROOT / "paper" / "results" / "wiring_readout" / "wiring"
for sd in sorted(base.iterdir()):
    truth = sd.name.split("_")[0] + "-AND"
    pw, meta = {}, None
    for f in sorted((sd / "fits").iterdir()):
        d = pointwise_loo(f)
        if d is not None:
            pw[f.name], meta = d["elpd"].to_numpy(), d
    assert meta is not None, f"{sd}: no fit kept a pointwise log-likelihood"
    runs, agents = meta["run"].to_numpy(), meta["agent"].to_numpy()
    conds = np.array(["_".join(r.split("_")[2:]) for r in runs])
    best = max(pw, key=lambda lb: pw[lb].sum())
    reads = {}
    for how in ("blocks", "agent"):
        keep = [
            lb
            for lb in pw
            if (d := (pw[best] - pw[lb])).sum() <= ELPD_BAND * se_of(d, runs, agents, how)
        ]
        agree = {e: {signs(lb)[e] for lb in keep} for e in signs(truth)}
        reads[how] = {
            "indistinguishable": len(keep),
            "identified": {e: v.pop() for e, v in agree.items() if len(v) == 1},
        }
    reads["n_fits_with_loglik"] = len(pw)
    out["sets"][sd.name] = reads
    if truth in pw:
        for lb in pw:
            diff = [e for e in signs(truth) if signs(lb)[e] != signs(truth)[e]]
            if len(diff) == 1:  # a type of one other sign
                d = pw[truth] - pw[lb]
                for c in np.unique(conds):
                    for a in "XYZ":
                        m = (conds == c) & (agents == a)
                        out["evidence"].append(
                            {
                                "set": sd.name,
                                "other": lb,
                                "edge": diff[0],
                                "condition": c,
                                "agent": a,
                                "nats": round(float(d[m].sum()), 2),
                            }
                        )
ev = out["evidence"]
out["median_evidence"] = {
    f"{e} {c} {a}": float(
        np.median([x["nats"] for x in ev if (x["edge"], x["condition"], x["agent"]) == (e, c, a)])
    )
    for e in ("X->Y", "X->Z", "Y->Z")
    for c in sorted({x["condition"] for x in ev})
    for a in "XYZ"
}
out["two_signs"] = {
    h: sum(len(v[h]["identified"]) >= 2 for v in out["sets"].values()) for h in ("blocks", "agent")
}
(Path(__file__).parent / "explore.json").write_text(json.dumps(out, indent=1) + "\n")
print(
    json.dumps({k: out[k] for k in ("two_signs",)}),
    {n: {h: v[h] for h in ("blocks", "agent")} for n, v in out["sets"].items()},
)
