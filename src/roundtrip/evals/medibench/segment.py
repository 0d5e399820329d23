"""Clinical structure preservation (MediBench pillar 2): segment original and reconstruction with
one segmenter, then compare the label maps.

The label maps are compared by :func:`roundtrip.metrics.segmentation.structure_metrics`
(SegSim, Dice, HD95). The segmenter adds:

- **SegQC**: the segmenter's own quality score of the reconstruction's segmentation, where it
  gives one (MediBench: SynthSeg 2's QC scores averaged over regions). ``NaN`` otherwise.

Segmenters (config ``medical.segmenter.type``):

- ``gmm`` (default, needs no weights): a foreground mask by Otsu's threshold, then a Gaussian
  mixture of ``classes`` intensity classes inside it (labels 1..classes by increasing mean;
  0 = background). Fitted once on the original and applied unchanged to the reconstruction, so it
  is one fixed segmenter per subject. Its score ("GMM-conf" in the tables, not SegQC) is the mean
  posterior probability of the assigned class over foreground voxels: a confidence, not SynthSeg's
  QC score (MediBench Sec. 3.2, Pillar 2).
- ``otsu``: multi-Otsu thresholds of the original (``classes`` + background), no SegQC.
- ``synthseg``: FreeSurfer's ``mri_synthseg`` (or ``SynthSeg_predict.py``) as a subprocess with
  ``--qc``; SegQC = mean of the QC CSV's region columns. SynthSeg writes labels at 1 mm
  isotropic; they are resampled back onto the input's grid (nearest neighbour, via the
  affines; :func:`resample_labels`).
- ``monai_bundle``: a MONAI bundle from a local directory (``configs/inference.json`` with a
  ``network_def``, weights in ``models/model.pt``), sliding-window inference, argmax labels.
"""
from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

SEGMENTER_TYPES = ("gmm", "otsu", "synthseg", "monai_bundle")


class SegmenterUnavailable(RuntimeError):
    """The configured segmenter cannot run here (a missing program or bundle); says what to install."""


# -- segmenters ----------------------------------------------------------------------------------
class Segmenter:
    """Interface: ``fit(original) -> params`` (JSON-able, may be ``{}``), then
    ``segment(volume, params, path) -> (labels int16, segqc float or NaN)``.

    ``volume`` is float32 ``(X, Y, Z)`` in ``[0, 1]``; ``path`` is the same volume as a NIfTI
    file, for segmenters that run as programs.
    """
    name = ""
    qc_note = ""

    def fit(self, original: np.ndarray) -> dict:
        return {}

    def segment(self, volume: np.ndarray, params: dict, path: str | Path | None = None
                ) -> tuple[np.ndarray, float]:
        raise NotImplementedError


def _sample(values: np.ndarray, n: int, seed: int) -> np.ndarray:
    if values.size <= n:
        return values
    return np.random.default_rng(seed).choice(values, n, replace=False)


class GmmSegmenter(Segmenter):
    """Otsu foreground mask + ``classes``-component Gaussian mixture (scikit-learn), seeded."""
    name = "gmm"
    qc_note = ("GMM-conf of the gmm segmenter: mean posterior probability of the assigned class "
               "(not SynthSeg's SegQC)")

    def __init__(self, classes: int = 3, seed: int = 0, max_voxels: int = 200_000):
        self.classes, self.seed, self.max_voxels = int(classes), int(seed), int(max_voxels)

    def fit(self, original: np.ndarray) -> dict:
        from skimage.filters import threshold_otsu
        from sklearn.mixture import GaussianMixture

        threshold = float(threshold_otsu(original))
        fg = original[original > threshold]
        if fg.size < self.classes * 10:
            raise ValueError(f"{fg.size} foreground voxels: too few for {self.classes} classes")
        gmm = GaussianMixture(self.classes, random_state=self.seed)
        gmm.fit(_sample(fg, self.max_voxels, self.seed)[:, None].astype(np.float64))
        order = np.argsort(gmm.means_[:, 0])
        return {"threshold": threshold, "means": gmm.means_[order, 0].tolist(),
                "variances": gmm.covariances_.reshape(-1)[order].tolist(),
                "weights": gmm.weights_[order].tolist()}

    def segment(self, volume, params, path=None):
        means, var = np.array(params["means"]), np.array(params["variances"])
        w = np.array(params["weights"])
        mask = volume > params["threshold"]
        x = volume[mask].astype(np.float64)[:, None]
        # posterior of each (sorted) component: the mixture's predict_proba, written out so
        # the fitted parameters round-trip through JSON exactly
        logp = np.log(w) - 0.5 * (np.log(2 * np.pi * var) + (x - means) ** 2 / var)
        logp -= logp.max(axis=1, keepdims=True)
        post = np.exp(logp)
        post /= post.sum(axis=1, keepdims=True)
        labels = np.zeros(volume.shape, dtype=np.int16)
        labels[mask] = post.argmax(axis=1) + 1
        qc = float(post.max(axis=1).mean()) if x.size else float("nan")
        return labels, qc


class OtsuSegmenter(Segmenter):
    """Multi-Otsu thresholds of the original (``classes`` tissue classes + background)."""
    name = "otsu"
    qc_note = "the otsu segmenter gives no quality score (SegQC needs synthseg)"

    def __init__(self, classes: int = 3):
        self.classes = int(classes)

    def fit(self, original):
        from skimage.filters import threshold_multiotsu

        return {"thresholds": threshold_multiotsu(original, classes=self.classes + 1).tolist()}

    def segment(self, volume, params, path=None):
        return np.digitize(volume, params["thresholds"]).astype(np.int16), float("nan")


class SynthSegSegmenter(Segmenter):
    """SynthSeg 2 as a program: ``{command} --i IN --o OUT --qc QC.csv [--robust] [--threads N]``.

    SegQC = mean of the QC CSV's region columns (MediBench Sec. 3.2, Pillar 2: the average QC score over
    regions). ``command`` is ``mri_synthseg`` (FreeSurfer 7.4+) or e.g.
    ``python /opt/SynthSeg/scripts/commands/SynthSeg_predict.py``.
    """
    name = "synthseg"
    qc_note = "SegQC: SynthSeg QC scores averaged over regions"

    def __init__(self, command: str = "mri_synthseg", robust: bool = True, threads: int = 1):
        self.command, self.robust, self.threads = shlex.split(command), robust, int(threads)

    def check(self) -> None:
        """Raises :class:`SegmenterUnavailable` when the program is not on PATH."""
        if shutil.which(self.command[0]) is None:
            raise SegmenterUnavailable(
                f"segmenter synthseg: {self.command[0]!r} not found on PATH; install FreeSurfer "
                "7.4+ (mri_synthseg) or SynthSeg and set medical.segmenter.command")

    def segment(self, volume, params, path=None):
        import nibabel as nib

        self.check()
        if path is None:
            raise ValueError("synthseg segments files: pass the volume's NIfTI path")
        with tempfile.TemporaryDirectory() as tmp:
            out, qc = Path(tmp) / "seg.nii.gz", Path(tmp) / "qc.csv"
            cmd = self.command + ["--i", str(path), "--o", str(out), "--qc", str(qc),
                                  "--threads", str(self.threads)] + (["--robust"] if self.robust else [])
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0 or not out.is_file():
                raise RuntimeError(f"synthseg failed (exit {run.returncode}): "
                                   f"{(run.stderr or run.stdout).strip()[-500:]}")
            seg = nib.load(str(out))
            labels = np.asarray(seg.dataobj).astype(np.int16)
            if labels.shape != tuple(volume.shape) or not np.allclose(seg.affine, nib.load(str(path)).affine):
                # SynthSeg writes its labels at 1 mm isotropic (Billot et al. 2023): back
                # onto the input's grid, so SegSim compares voxel for voxel (Eq. 4)
                labels = resample_labels(labels, seg.affine, volume.shape, nib.load(str(path)).affine)
            return _match_shape(labels, volume.shape), parse_synthseg_qc(qc)


def resample_labels(labels: np.ndarray, labels_affine: np.ndarray, shape: tuple[int, ...],
                    affine: np.ndarray, fill: int = 0) -> np.ndarray:
    """Nearest-neighbour resampling of a label map onto another voxel grid, through the affines.

    Each target voxel's centre is mapped to world coordinates (``affine``), then into the label
    map's voxel space (inverse of ``labels_affine``) and rounded to the nearest voxel; targets
    outside the label map get ``fill``. Labels are never interpolated.

    Args:
        labels: int ``(X', Y', Z')`` label map (e.g. SynthSeg's 1 mm output).
        labels_affine, affine: 4 x 4 voxel-to-world (mm) matrices of the label map and target.
        shape: target grid ``(X, Y, Z)``.

    Returns:
        int16 ``shape`` array.

    Raises:
        ValueError: an affine that is not 4 x 4 or not invertible.
    """
    labels_affine, affine = np.asarray(labels_affine, float), np.asarray(affine, float)
    if labels_affine.shape != (4, 4) or affine.shape != (4, 4):
        raise ValueError("affines must be 4 x 4 voxel-to-world matrices")
    try:
        to_labels = np.linalg.inv(labels_affine) @ affine
    except np.linalg.LinAlgError as exc:
        raise ValueError("the label map's affine is not invertible") from exc
    grid = np.indices(tuple(shape), dtype=float).reshape(3, -1)
    src = to_labels[:3, :3] @ grid + to_labels[:3, 3:4]
    idx = np.rint(src).astype(np.int64)
    inside = np.all((idx >= 0) & (idx < np.array(labels.shape)[:, None]), axis=0)
    out = np.full(grid.shape[1], fill, dtype=np.int16)
    out[inside] = labels[idx[0, inside], idx[1, inside], idx[2, inside]]
    return out.reshape(tuple(shape))


def parse_synthseg_qc(path: str | Path) -> float:
    """Mean of the region columns of a SynthSeg ``--qc`` CSV (first row; the first column is the
    subject). Raises ValueError when there are no numeric QC columns."""
    import pandas as pd

    df = pd.read_csv(path)
    values = pd.to_numeric(df.iloc[0, 1:], errors="coerce").dropna()
    if values.empty:
        raise ValueError(f"{path}: no QC scores")
    return float(values.mean())


def _match_shape(labels: np.ndarray, shape) -> np.ndarray:
    if labels.shape != tuple(shape):
        raise ValueError(f"segmentation shape {labels.shape} differs from the volume {tuple(shape)} "
                         "(the segmenter resampled it)")
    return labels


class MonaiBundleSegmenter(Segmenter):
    """A segmentation network from a local MONAI bundle directory.

    The bundle holds ``configs/inference.json`` (or ``.yaml``) defining ``network_def`` and
    ``models/model.pt`` (a state dict). Inputs are the ``[0, 1]`` volume as ``[1, 1, X, Y, Z]``;
    labels are the argmax over output channels; sliding windows of ``roi_size``.
    """
    name = "monai_bundle"
    qc_note = "a MONAI bundle gives no quality score"

    def __init__(self, path: str, roi_size: int = 96, device: str = "cpu"):
        self.path, self.roi_size, self.device = Path(path), int(roi_size), device
        self._net = None

    def check(self) -> None:
        cfg = self._config_file()
        if not (self.path / "models" / "model.pt").is_file() or cfg is None:
            raise SegmenterUnavailable(
                f"segmenter monai_bundle: {self.path} needs configs/inference.json (or .yaml) "
                "and models/model.pt; download the bundle on a machine with internet "
                "(python -m monai.bundle download) and set medical.segmenter.path")

    def _config_file(self) -> Path | None:
        for name in ("inference.json", "inference.yaml", "inference.yml"):
            if (self.path / "configs" / name).is_file():
                return self.path / "configs" / name
        return None

    def network(self):
        import torch
        from monai.bundle import ConfigParser

        if self._net is None:
            self.check()
            parser = ConfigParser()
            parser.read_config(str(self._config_file()))
            net = parser.get_parsed_content("network_def")
            state = torch.load(self.path / "models" / "model.pt", map_location="cpu",
                               weights_only=True)
            net.load_state_dict(state)
            self._net = net.eval().to(self.device)
        return self._net

    def segment(self, volume, params, path=None):
        import torch
        from monai.inferers import sliding_window_inference

        net = self.network()
        x = torch.from_numpy(np.ascontiguousarray(volume, dtype=np.float32))[None, None]
        with torch.no_grad():
            y = sliding_window_inference(x.to(self.device), (self.roi_size,) * 3, 1, net,
                                         overlap=0.25)
        return y[0].argmax(0).cpu().numpy().astype(np.int16), float("nan")


def build_segmenter(spec: dict | None) -> Segmenter:
    """The segmenter of config ``medical.segmenter`` (default ``{"type": "gmm", "classes": 3}``).

    Raises:
        ValueError: unknown type.
    """
    spec = dict(spec or {"type": "gmm"})
    kind = spec.pop("type", "gmm")
    if kind == "gmm":
        return GmmSegmenter(spec.get("classes", 3), spec.get("seed", 0))
    if kind == "otsu":
        return OtsuSegmenter(spec.get("classes", 3))
    if kind == "synthseg":
        return SynthSegSegmenter(spec.get("command", "mri_synthseg"), spec.get("robust", True),
                                 spec.get("threads", 1))
    if kind == "monai_bundle":
        return MonaiBundleSegmenter(spec["path"], spec.get("roi_size", 96))
    raise ValueError(f"medical.segmenter.type: unknown segmenter {kind!r}; use one of "
                     f"{SEGMENTER_TYPES}")


def save_params(path: str | Path, params: dict) -> None:
    """Write a segmenter's fitted parameters (:meth:`Segmenter.fit`) as JSON."""
    Path(path).write_text(json.dumps(params))


def load_params(path: str | Path) -> dict:
    """Read parameters written by :func:`save_params`. Raises OSError/ValueError on a bad file."""
    return json.loads(Path(path).read_text())
