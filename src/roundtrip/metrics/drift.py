"""Semantic drift over generations (The Telephone Game, UCF-UM, Sec. 3.1 and 3.2).

- :func:`similarity_curve`: ``S_delta(g)``, the mean over items of ``sim(inp_d, M_d^(g))`` at
  each generation (Eq. 1), with a percentile-bootstrap CI over items.
- :func:`mcd`: Mean Cumulative Drift, the mean of ``S_delta(g)`` over the evaluated generations
  (Eq. 2); ``MCD_avg`` is the mean of ``MCD_delta`` over the paper's four mappings (Sec. 3.1;
  :data:`roundtrip.evals.telephone.tables.PAPER_MAPPINGS`).
- :func:`fit_sdr`: the Semantic Drift Rate curve fitted to ``S_delta(g)``: the paper's power law
  ``y = alpha * g^(-beta) + gamma`` (Sec. 3.2, Table 3) or the exponential
  ``y = a * exp(-b * g) + c`` of the authors' released code, with ``scipy.optimize.curve_fit``.
- :func:`cer_similarity`: ``1 - min(CER, 1)``, a text-to-text similarity in [0, 1] that needs no
  model (roundtrip's offline stand-in beside wordllama; not in the paper).

No file I/O; numbers in, numbers out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from roundtrip.metrics.stats import Summary, bootstrap_mean

#: SDR curve forms: name -> (parameter names, formula for tables).
SDR_FORMS = {
    "power": (("alpha", "beta", "gamma"), "alpha * g^(-beta) + gamma"),
    "exp": (("a", "b", "c"), "a * exp(-b * g) + c"),
}


def similarity_curve(per_item: dict[int, list[float]], n_boot: int = 1000,
                     seed: int = 0) -> dict[int, Summary]:
    """``S_delta(g)`` (UCF-UM Eq. 1) with a 95 % percentile-bootstrap CI over items.

    Args:
        per_item: generation ``g`` (int >= 1) -> the similarities of the items at ``g``
            (floats; NaN for items without a value at ``g`` are dropped).
        n_boot: bootstrap resamples; seed: their generator's seed.

    Returns:
        generation -> :class:`~roundtrip.metrics.stats.Summary` (mean, CI, number of items),
        sorted by generation.
    """
    return {g: bootstrap_mean(per_item[g], n_boot=n_boot, seed=seed + g) for g in sorted(per_item)}


def mcd(curve: dict[int, float]) -> float:
    """Mean Cumulative Drift ``MCD_delta = (1/G) sum_g S_delta(g)`` (UCF-UM Eq. 2).

    Args:
        curve: generation -> ``S_delta(g)``; generation 0 (the input itself) must not be in it.
            NaN values (a generation no item reached) are left out of the mean.

    Returns:
        The mean, in the similarity's range (cosine: [-1, 1]); higher means less drift. NaN for
        an empty curve.

    Raises:
        ValueError: generation 0 is in the curve (Eq. 2 sums from g = 1).
    """
    if 0 in curve:
        raise ValueError("MCD averages generations 1..G; generation 0 is the input itself")
    values = np.array([v for v in curve.values() if not math.isnan(v)], dtype=np.float64)
    return float(values.mean()) if len(values) else math.nan


def _power(g, alpha, beta, gamma):
    return alpha * np.power(g, -beta) + gamma


def _exp(g, a, b, c):
    return a * np.exp(-b * g) + c


_FUNCTIONS = {"power": _power, "exp": _exp}
#: Power-law bounds (alpha, beta, gamma): a decay (alpha, beta >= 0) to a baseline in [0, 1]; the
#: published Table 3 has every gamma >= 0 and most exactly 0, at the bound.
POWER_BOUNDS = ((0.0, 0.0, 0.0), (2.0, 10.0, 1.0))
#: The released exponential fit: start and evaluation budget of its unbounded ``curve_fit``.
EXP_INITIAL, EXP_MAXFEV = (1.0, 0.1, 0.0), 5000


@dataclass
class SDRFit:
    """One fitted SDR curve.

    Attributes:
        form: ``power`` (UCF-UM Sec. 3.2) or ``exp`` (the authors' released code).
        params: parameter name -> value (``alpha, beta, gamma`` or ``a, b, c``); NaN when the fit
            failed.
        stderr: parameter name -> standard error from the covariance of the fit (NaN where it
            cannot be estimated: as many points as parameters, or a singular covariance).
        r2: coefficient of determination on the fitted points (NaN when the fit failed or the
            points are constant).
        n: number of points fitted.
        ok: whether the fit converged; when False, ``reason`` says why and no parameter is given.
        initial, bounds: the starting values and bounds used.
    """
    form: str
    params: dict[str, float]
    stderr: dict[str, float]
    r2: float
    n: int
    ok: bool
    reason: str = ""
    initial: tuple[float, ...] = ()
    bounds: tuple[tuple[float, ...], tuple[float, ...]] = field(default=((), ()))

    def predict(self, g) -> np.ndarray:
        """The fitted curve at generations ``g`` (array-like of floats > 0).

        Raises:
            ValueError: the fit failed (there is no curve).
        """
        if not self.ok:
            raise ValueError(f"no {self.form} curve: {self.reason}")
        return _FUNCTIONS[self.form](np.asarray(g, dtype=np.float64), *self.params.values())


def _failed(form: str, n: int, reason: str, initial=(), bounds=((), ())) -> SDRFit:
    names = SDR_FORMS[form][0]
    return SDRFit(form, dict.fromkeys(names, math.nan), dict.fromkeys(names, math.nan), math.nan,
                  n, False, reason, tuple(initial), bounds)


def fit_sdr(generations, similarities, form: str = "power") -> SDRFit:
    """Fit the Semantic Drift Rate curve to ``S_delta(g)`` (UCF-UM Sec. 3.2, Table 3).

    ``power``: ``y = alpha * g^(-beta) + gamma`` (Sec. 3.2), initial values ``alpha = y_first -
    min(y)``, ``beta = 0.1``, ``gamma = min(y)`` clipped to [0, 1], bounds
    :data:`POWER_BOUNDS`: ``alpha`` in [0, 2], ``beta`` in [0, 10], ``gamma`` in [0, 1]. The
    published Table 3 fits are bounded so: its 14 ``gamma`` are all >= 0, 9 printed 0.0000 (the
    bound) and one 0.0001, which a ``gamma >= -1`` fit of a near-linear decay does not give
    (S = 0.62 - 0.006 g at g = 2, 4, ..., 20: ``gamma >= -1`` gives alpha 1.659, beta 0.030,
    gamma -1.000; ``gamma >= 0`` gives 0.662, 0.082, 0). Tolerances 1e-12: scipy's defaults
    stop short of a ``gamma`` at its bound.

    ``exp``: ``y = a * exp(-b * g) + c`` as the authors' released code fits it
    (github.com/mollahsabbir/Semantic-Drift-in-Unified-Models @ 4f1d253,
    ``semantic-drift/mcd-sdr.py``, ``main``): ``scipy.optimize.curve_fit`` unbounded
    (Levenberg-Marquardt) from ``p0 = (1, 0.1, 0)`` with ``maxfev = 5000``
    (:data:`EXP_INITIAL`, :data:`EXP_MAXFEV`).

    Args:
        generations: the generations ``g`` (>= 1; for the power law g = 0 is undefined).
        similarities: ``S_delta(g)`` at those generations. Pairs with a NaN are dropped.
        form: ``power`` or ``exp``.

    Returns:
        :class:`SDRFit` (``bounds`` infinite for ``exp``). A constant curve (no drift) gives the
        exact flat fit (``alpha = beta = 0, gamma = S``; ``a = b = 0, c = S``) with ``reason``
        saying so. A fit that cannot be made (fewer than 3 points, a non-positive generation
        for the power law, no convergence) has ``ok=False`` with the reason and NaN
        parameters: a failed fit is reported as such, never as numbers.

    Raises:
        ValueError: unknown ``form``, or inputs of different lengths.
    """
    if form not in SDR_FORMS:
        raise ValueError(f"unknown SDR form {form!r}; use one of {sorted(SDR_FORMS)}")
    g = np.asarray(generations, dtype=np.float64)
    y = np.asarray(similarities, dtype=np.float64)
    if g.shape != y.shape or g.ndim != 1:
        raise ValueError(f"generations {g.shape} and similarities {y.shape} must be equal 1-D")
    keep = ~(np.isnan(g) | np.isnan(y))
    g, y = g[keep], y[keep]
    n = len(g)
    if n < 3:
        return _failed(form, n, f"{n} generation(s) with a value; 3 parameters need at least 3")
    if form == "power" and np.any(g <= 0):
        return _failed(form, n, "the power law is undefined at generation 0")
    order = np.argsort(g)
    g, y = g[order], y[order]
    names = SDR_FORMS[form][0]
    if np.ptp(y) < 1e-12:  # no drift: the flat curve 0 * g^0 + S is exact, the rate is 0
        flat = dict(zip(names, (0.0, 0.0, float(y[0]))))
        return SDRFit(form, flat, dict.fromkeys(names, math.nan), math.nan, n, True,
                      "constant S(g): no drift", (), ((), ()))
    if form == "power":
        lower, upper = POWER_BOUNDS
        initial = (float(np.clip(y[0] - y.min(), 1e-3, 2.0)), 0.1, float(np.clip(y.min(), 0, 1)))
        # tight tolerances: scipy's defaults stop short when gamma sits at its bound 0
        options = {"bounds": (lower, upper), "maxfev": 20000, "ftol": 1e-12, "xtol": 1e-12,
                   "gtol": 1e-12}
    else:  # unbounded Levenberg-Marquardt, as the released fit
        lower, upper = (-np.inf,) * 3, (np.inf,) * 3
        initial = EXP_INITIAL
        options = {"maxfev": EXP_MAXFEV}
    import warnings

    from scipy.optimize import OptimizeWarning, curve_fit

    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)  # NaN stderr says it
            popt, pcov = curve_fit(_FUNCTIONS[form], g, y, p0=initial, **options)
    except (RuntimeError, ValueError) as exc:
        return _failed(form, n, f"curve_fit did not converge: {exc}", initial, (lower, upper))
    if not np.all(np.isfinite(popt)):
        return _failed(form, n, "curve_fit returned non-finite parameters", initial, (lower, upper))
    with np.errstate(invalid="ignore"):
        se = np.sqrt(np.diag(pcov)) if n > 3 else np.full(3, math.nan)
    residual = y - _FUNCTIONS[form](g, *popt)
    total = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum(residual ** 2)) / total if total > 0 else math.nan
    return SDRFit(form, dict(zip(names, map(float, popt))),
                  dict(zip(names, (float(s) if np.isfinite(s) else math.nan for s in se))),
                  r2, n, True, "", initial, (lower, upper))


def average_fits(fits: list[SDRFit]) -> dict[str, float]:
    """Each parameter averaged over the mappings delta (UCF-UM Sec. 3.2: "we average each
    parameter across all distance mappings"), over the fits that succeeded.

    Returns:
        parameter name -> mean (NaN when no fit succeeded), plus ``n_fits``.

    Raises:
        ValueError: the fits are of different forms.
    """
    forms = {f.form for f in fits}
    if len(forms) > 1:
        raise ValueError(f"cannot average fits of different forms {sorted(forms)}")
    good = [f for f in fits if f.ok]
    names = SDR_FORMS[forms.pop()][0] if forms else ()
    out = {k: float(np.mean([f.params[k] for f in good])) if good else math.nan for k in names}
    out["n_fits"] = len(good)
    return out


def cer_similarity(reference: str, hypothesis: str) -> float:
    """``1 - min(CER, 1)`` in [0, 1]: 1 for identical texts (after VTBench's normalization),
    0 when the edit distance reaches the reference length. An offline text-to-text similarity
    (roundtrip's; the paper uses MPNet and CLIP embeddings).

    Raises:
        ValueError: an empty reference (CER is undefined).
    """
    from roundtrip.metrics.text import cer, normalize_text

    ref, hyp = normalize_text(reference), normalize_text(hypothesis)
    if not ref:
        raise ValueError("CER similarity needs a non-empty reference text")
    return 1.0 - min(cer(ref, hyp), 1.0)
