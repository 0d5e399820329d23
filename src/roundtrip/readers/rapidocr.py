"""RapidOCR (PP-OCRv4 in ONNX Runtime): a second offline OCR engine beside Tesseract.

The ``rapidocr-onnxruntime`` wheel ships PaddleOCR's PP-OCRv4 text detector, its Chinese/English
text recognizer and the text-direction classifier, so it reads Chinese and English with nothing
to download. Other languages need a PaddleOCR recognizer converted to ONNX and its character
dictionary, named per Tesseract language code in ``ocr.engines.<name>.rec_models``, e.g.
``kor: {model: /models/korean_PP-OCRv3_rec.onnx, keys: /models/korean_dict.txt}``.

Readers share one interface, ``read(image, lang) -> str`` (:mod:`roundtrip.readers`). VTBench
App. G compares OCR engines on the same reconstructions (Table 5); this is the engine that makes
that comparison run offline.
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from roundtrip.readers.tesseract import OCRUnavailable

#: Tesseract language codes the bundled PP-OCRv4 recognizer reads (Chinese and Latin script).
BUNDLED_LANGS = frozenset({"eng", "chi_sim", "chi_tra"})


def _parts(lang: str) -> list[str]:
    return [p for p in lang.split("+") if p]


class RapidOCR:
    """PP-OCRv4 detection + recognition through ``rapidocr_onnxruntime``.

    Args:
        rec_models: Tesseract language code -> ``{model: .onnx path, keys: dictionary path}``
            for languages the wheel does not cover.
        threads: ONNX Runtime intra-op threads per model (1: the OCR rules parallelize over
            items instead).
        text_score: minimum recognition confidence of a kept line, in [0, 1].
        box_thresh: minimum detection score of a text box, in [0, 1].

    Raises:
        OCRUnavailable: (from :meth:`check` or :meth:`read`) the package is missing, or a
            language has no recognizer; the message names the config key to set.
        ValueError: a ``rec_models`` entry without ``model`` and ``keys``.
    """

    name = "rapidocr"
    #: The config entry, for messages (set by :func:`roundtrip.readers.build_ocr`).
    config_key = "ocr.engines.rapidocr"

    def __init__(self, rec_models: dict | None = None, threads: int = 1,
                 text_score: float = 0.5, box_thresh: float = 0.5):
        self.rec_models = {}
        for lang, entry in (rec_models or {}).items():
            if not isinstance(entry, dict) or not {"model", "keys"} <= set(entry):
                raise ValueError(f"rec_models.{lang}: needs 'model' (.onnx) and 'keys' "
                                 "(character dictionary) paths")
            self.rec_models[lang] = {k: str(entry[k]) for k in ("model", "keys")}
        self.threads, self.text_score, self.box_thresh = int(threads), text_score, box_thresh
        #: The same image always reads the same: one ONNX Runtime thread per model
        self.deterministic = self.threads == 1
        self._engines: dict[str, object] = {}
        self._lock = threading.Lock()

    def languages(self) -> set[str]:
        """Tesseract codes this engine can read: the bundled ones and ``rec_models``."""
        return set(BUNDLED_LANGS) | set(self.rec_models)

    def _recognizer_for(self, lang: str) -> str:
        """The key of the recognizer reading ``lang`` (``bundled`` or a ``rec_models`` code)."""
        parts = _parts(lang) or ["eng"]
        custom = [p for p in parts if p in self.rec_models]
        if len(set(custom)) > 1:
            raise OCRUnavailable(f"RapidOCR reads one script per recognizer; {lang!r} needs "
                                 f"{sorted(set(custom))}")
        missing = [p for p in parts if p not in self.languages()]
        if missing:
            raise OCRUnavailable(
                f"RapidOCR has no recognizer for {missing}: the wheel reads Chinese and English "
                f"(PP-OCRv4); set {self.config_key}.rec_models.{missing[0]}: "
                "{model: <PaddleOCR rec .onnx>, keys: <its dictionary .txt>}")
        return custom[0] if custom else "bundled"

    def check(self, langs: list[str]) -> str:
        """Verify the package, and a recognizer (with its files) for every language; returns
        the package version."""
        try:
            import rapidocr_onnxruntime  # noqa: F401
            from importlib.metadata import version
        except ImportError as exc:
            raise OCRUnavailable("rapidocr is not installed: pip install "
                                 f"rapidocr-onnxruntime ({exc})") from exc
        for lang in langs:
            key = self._recognizer_for(lang)
            for kind, path in self.rec_models.get(key, {}).items():
                if not Path(path).is_file():
                    raise OCRUnavailable(f"{self.config_key}.rec_models.{key}.{kind}: "
                                         f"{path} does not exist")
        return version("rapidocr-onnxruntime")

    def _engine(self, key: str):
        with self._lock:  # models load once per recognizer, shared by the reading threads
            if key not in self._engines:
                from rapidocr_onnxruntime import RapidOCR as Engine

                kwargs = {"intra_op_num_threads": self.threads, "inter_op_num_threads": 1,
                          "print_verbose": False}
                if key != "bundled":
                    kwargs |= {"rec_model_path": self.rec_models[key]["model"],
                               "rec_keys_path": self.rec_models[key]["keys"]}
                self._engines[key] = Engine(**kwargs)
            return self._engines[key]

    def read(self, image: np.ndarray, lang: str = "eng") -> str:
        """Text of an ``(H, W, 3)`` ``uint8``/``uint16`` image: the detected lines in reading
        order (top to bottom, then left to right), boxes of one line joined by a space, lines
        by a newline."""
        if image.dtype == np.uint16:
            image = (image // 257).astype(np.uint8)
        engine = self._engine(self._recognizer_for(lang))
        # RapidOCR expects OpenCV's BGR channel order
        result, _ = engine(np.ascontiguousarray(image[..., ::-1]), text_score=self.text_score,
                           box_thresh=self.box_thresh)
        return reading_order([(np.asarray(box, float), text) for box, text, _ in result or []])


def reading_order(boxes: list[tuple[np.ndarray, str]]) -> str:
    """Join detected text boxes into lines: a box whose vertical centre lies within the height
    of the line's first box joins that line; lines top to bottom, boxes left to right.

    Args:
        boxes: ``(corners [4, 2] in pixels (x, y), text)`` pairs in any order.
    """
    lines: list[list[tuple[float, float, float, str]]] = []
    for box, text in sorted(boxes, key=lambda b: (b[0][:, 1].min(), b[0][:, 0].min())):
        top, bottom = box[:, 1].min(), box[:, 1].max()
        centre, left = (top + bottom) / 2, box[:, 0].min()
        for line in lines:
            if line[0][0] <= centre <= line[0][1]:
                line.append((top, bottom, left, text))
                break
        else:
            lines.append([(top, bottom, left, text)])
    return "\n".join(" ".join(t for *_, t in sorted(line, key=lambda b: b[2])) for line in lines)
