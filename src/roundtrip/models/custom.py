"""Bring your own tokenizer: a TorchScript file, or a class by import path plus a state dict.

The module must offer ``encode(x) -> latent`` and ``decode(latent) -> x_hat`` on float32
``[B, 3, H, W]`` tensors in ``[-1, 1]`` (set ``input_range: [0, 1]`` if it expects [0, 1]), and
optionally ``tokens(latent) -> LongTensor``. A latent may be a tensor or a tuple/dict of tensors.
See README, "Bring your own tokenizer".
"""
from __future__ import annotations

import difflib
import importlib
import sys
from pathlib import Path

import torch

from roundtrip.models.base import FAMILIES, ModelInfo
from roundtrip.models.torch_base import TorchAdapter, read_weights, require_file

HOW = "Copy the file there, or fix the path in the config file."



def _import(mod_name: str, folders: list[str]):
    """``importlib.import_module(mod_name)``, except that a module of that name imported
    earlier from outside ``folders`` gives way to the one in ``folders``: two configs checked
    in one process (a test session, a notebook) may each bring a ``my_tok.py`` of their own.

    Raises:
        ModuleNotFoundError, or whatever the module raises while importing.
    """
    top = mod_name.split(".")[0]
    cached = sys.modules.get(top)
    here = [Path(f).resolve() for f in folders]
    if cached is not None and here:
        origin = Path(getattr(cached, "__file__", None) or "/").resolve()
        local = any((f / f"{top}.py").is_file() or (f / top).is_dir() for f in here)
        if local and not any(origin.is_relative_to(f) for f in here):
            for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
                del sys.modules[name]
            importlib.invalidate_caches()
    return importlib.import_module(mod_name)

class _CustomAdapter(TorchAdapter):
    """Shared settings of user-provided modules.

    Args:
        family: one of the model families (default ``continuous``).
        downsample: spatial reduction of the latent grid (used to pad inputs).
        native_sizes: list of ``[H, W]`` the model was trained at.
        fixed_size: only ``native_sizes`` are accepted.
        codebook_size: for discrete models.
        input_range: ``[-1, 1]`` (default) or ``[0, 1]``.
    """

    def __init__(self, family: str = "continuous", downsample: int = 1,
                 native_sizes: list | None = None, fixed_size: bool = False,
                 codebook_size: int | None = None, input_range: list | None = None,
                 precision: str = "fp32"):
        super().__init__(precision)
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
        rng = list(input_range or [-1, 1])
        if rng not in ([-1, 1], [0, 1]):
            raise ValueError(f"input_range must be [-1, 1] or [0, 1], got {rng}")
        self.family, self.downsample, self.fixed_size = family, int(downsample), bool(fixed_size)
        self.native_sizes = [tuple(int(v) for v in s) for s in (native_sizes or [])]
        self.codebook_size, self.unit_range = codebook_size, rng == [0, 1]

    def encode(self, x):
        x = x.to(self.device)
        return self.module.encode((x + 1) / 2 if self.unit_range else x)

    def decode(self, latent):
        y = self.module.decode(latent)
        return y * 2 - 1 if self.unit_range else y

    def tokens(self, latent):
        fn = getattr(self.module, "tokens", None)
        return fn(latent).long() if fn is not None else None

    def info(self):
        return ModelInfo(family=self.family, params=self.n_params(), native_sizes=self.native_sizes,
                         downsample=self.downsample, codebook_size=self.codebook_size,
                         fixed_size=self.fixed_size)


class TorchScriptModel(_CustomAdapter):
    """A ``torch.jit.save``-d module with ``encode``/``decode`` methods (decorate them with
    ``@torch.jit.export`` before ``torch.jit.script``: TorchScript compiles only ``forward``).

    Args:
        path: the ``.pt`` TorchScript file.
    """

    def __init__(self, path: str, **kwargs):
        super().__init__(**kwargs)
        self.path = path

    def check_weights(self):
        require_file(self.path, self.name, "TorchScript file", HOW)

    def _load_module(self):
        key = f"models.{self.name}.path"
        path = require_file(self.path, self.name, "TorchScript file", HOW)
        module = read_weights(path, key, lambda p: torch.jit.load(p, map_location="cpu"))
        missing = [m for m in ("encode", "decode") if not hasattr(module, m)]
        if missing:
            raise ValueError(f"{key}: the TorchScript module in {path} has no "
                             f"{' or '.join(missing)}: TorchScript compiles only forward and what "
                             "it calls; decorate encode and decode (and tokens) with "
                             "@torch.jit.export before torch.jit.script")
        return module


class StateDictModel(_CustomAdapter):
    """A class named by import path, built with ``kwargs``, weights from a state-dict file.

    Args:
        import_path: ``package.module:ClassName`` (importable on ``PYTHONPATH``, or under
            ``pythonpath``).
        kwargs: constructor arguments.
        state_dict: path of a ``torch.save``-d state dict (or ``{"state_dict": ...}``).
        strict: passed to ``load_state_dict``.
        pythonpath: a folder (or list of folders) searched first for the module, so the model
            imports in every job without exporting ``PYTHONPATH``.

    Loading raises :class:`ValueError` whose message starts with the key to fix:
    ``models.<name>.import_path`` (module or class not found), ``models.<name>.kwargs`` (the
    class refuses them), ``models.<name>.state_dict`` (the weights do not fit the class).
    """

    def __init__(self, import_path: str, state_dict: str, kwargs: dict | None = None,
                 strict: bool = True, pythonpath: str | list | None = None, **rest):
        super().__init__(**rest)
        if ":" not in import_path:
            raise ValueError(f"import_path must look like 'package.module:Class', got {import_path!r}")
        self.import_path, self.state_dict = import_path, state_dict
        self.kwargs, self.strict = dict(kwargs or {}), bool(strict)
        folders = [pythonpath] if isinstance(pythonpath, str) else list(pythonpath or [])
        self.pythonpath = [str(Path(f).expanduser()) for f in folders]

    def _class(self):
        mod_name, cls_name = self.import_path.split(":", 1)
        key = f"models.{self.name}"
        for folder in reversed(self.pythonpath):
            if folder not in sys.path:
                sys.path.insert(0, folder)
        try:
            module = _import(mod_name, self.pythonpath)
        except ModuleNotFoundError as exc:
            if exc.name and mod_name.split(".")[0] == exc.name.split(".")[0]:
                raise ValueError(self._not_found(exc.name)) from exc
            raise ValueError(f"{key}.import_path: importing '{mod_name}' failed: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - the user's module raised while importing
            raise ValueError(f"{key}.import_path: importing '{mod_name}' failed: "
                             f"{type(exc).__name__}: {exc}") from exc
        cls = getattr(module, cls_name, None)
        if cls is None:
            classes = sorted(n for n, v in vars(module).items()
                             if isinstance(v, type) and v.__module__ == module.__name__)
            raise ValueError(f"{key}.import_path: module '{mod_name}' has no '{cls_name}' "
                             f"(classes there: {', '.join(classes) or 'none'})")
        return cls

    def _not_found(self, module: str) -> str:
        """Why ``module`` was not found: with ``pythonpath`` set, the modules its folders hold
        (a misspelt name, not a missing path, is then the likely cause)."""
        key = f"models.{self.name}"
        if not self.pythonpath:
            return (f"{key}.import_path: module '{module}' not found: add its folder to "
                    f"PYTHONPATH or set {key}.pythonpath")
        top = module.split(".")[0]
        there = sorted({p.stem if p.suffix == ".py" else p.name
                        for f in self.pythonpath if Path(f).is_dir() for p in Path(f).iterdir()
                        if (p.suffix == ".py" and p.stem != "__init__")
                        or (p / "__init__.py").is_file()})
        close = difflib.get_close_matches(top, there, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return (f"{key}.import_path: module '{module}' is not in {key}.pythonpath "
                f"({', '.join(self.pythonpath)}: {', '.join(there) or 'no modules'}) nor on "
                f"PYTHONPATH: {hint}check the module name in {key}.import_path")

    def check_weights(self):
        require_file(self.state_dict, self.name, "state dict", HOW)

    def _load_module(self):
        cls = self._class()
        key = f"models.{self.name}"
        try:
            module = cls(**self.kwargs)
        except Exception as exc:  # noqa: BLE001 - the user's constructor
            raise ValueError(f"{key}.kwargs: {cls.__name__}(**{self.kwargs}) failed: "
                             f"{type(exc).__name__}: {exc}") from exc
        path = require_file(self.state_dict, self.name, "state dict", HOW)
        sd = read_weights(path, f"{key}.state_dict")
        sd = sd.get("state_dict", sd) if isinstance(sd, dict) else sd
        try:
            module.load_state_dict(sd, strict=self.strict)
        except RuntimeError as exc:
            # torch lists every mismatch on its own line; the first one says enough
            lines = [line.strip() for line in str(exc).splitlines()[1:] if line.strip()]
            first = lines[0] if lines else str(exc).splitlines()[0]
            more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
            raise ValueError(f"{key}.state_dict: {path} does not fit {cls.__name__}"
                             f"(**{self.kwargs}): {first}{more}; check {key}.kwargs "
                             f"(or set {key}.strict: false for missing or extra keys)") from exc
        return module
