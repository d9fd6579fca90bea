"""Near-duplicate measure for scenario templates, with no model download: TF-IDF cosine.

Features are lower-cased word unigrams and bigrams ({ACTOR} dropped, partner placeholders kept as
words); weights are raw counts x smoothed IDF, ln((1 + n) / (1 + df)) + 1, rows L2-normalised: the
defaults of scikit-learn's TfidfVectorizer, computed with numpy and scipy.sparse (scikit-learn is not a
dependency). The IDF comes from the whole set given, so a cell's pairs are compared on words that are rare
across the set.

THRESHOLD: a within-cell pair at or above it is a near-duplicate. Chosen from the bundled set: its 8,722
within-cell pairs have median 0.042, 99th percentile 0.10 and maximum 0.206; a template with 30% of its
words replaced at random still scores about 0.52 against the original (40%: about 0.40). 0.35 sits well
above every distinct pair and below a light rewrite.

SET_THRESHOLD: any two scenarios of the whole set (all 841,753 pairs of 1,298, across cells too) at or
above it reuse one idea. Chosen from the bundled set before its 2026-12 revision: all pairs have median
0.029, 99.9th percentile 0.110 and 99.99th 0.159; the within-cell pairs, written to be distinct, reach
0.206; every one of the ten pairs at or above 0.22 (0.221-0.321) retells one idea in another cell (a false
dog-bite report, a jacket left on a seat, keys pulled from an ignition, a hidden passport, a phone locked
in a car, a reclined plane seat, a slow swimmer in the wrong lane), while pairs between 0.19 and 0.22 mix
reuse with shared settings (a train, a flight, a bus). 0.22 catches idea reuse with few false alarms.
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
from scipy import sparse

from .schema import Scenario

THRESHOLD = 0.35
SET_THRESHOLD = 0.22
_WORD = re.compile(r"\{[A-Z_]+\}|[A-Za-z0-9]+(?:'[A-Za-z]+)?")


def features(text: str) -> list[str]:
    """Unigrams and bigrams of one text."""
    words = [w.lower() for w in _WORD.findall(text.replace("{ACTOR}", " "))]
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


def tfidf_matrix(texts: list[str]) -> sparse.csr_matrix:
    """Rows = texts, L2-normalised TF-IDF vectors over the texts' own vocabulary (sparse)."""
    vocab: dict[str, int] = {}
    rows, cols = [], []
    for row, text in enumerate(texts):
        for f in features(text):
            rows.append(row)
            cols.append(vocab.setdefault(f, len(vocab)))
    counts = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(texts), len(vocab)))
    counts.sum_duplicates()
    df = np.bincount(counts.indices, minlength=len(vocab))
    weighted = counts @ sparse.diags(np.log((1 + len(texts)) / (1 + df)) + 1)
    norms = np.sqrt(np.asarray(weighted.multiply(weighted).sum(axis=1)).ravel())
    return sparse.diags(1 / np.where(norms == 0, 1, norms)) @ weighted


def _cosines(matrix: sparse.csr_matrix) -> np.ndarray:
    return (matrix @ matrix.T).toarray()


def near_duplicates(texts: list[str], threshold: float = THRESHOLD,
                    background: list[str] | None = None) -> list[tuple[int, int, float]]:
    """Pairs (i, j, similarity), i < j, of texts at or above threshold, most similar first.
    background: further texts that only inform the IDF (e.g. the rest of the set when texts is one cell)."""
    sims = _cosines(tfidf_matrix(list(texts) + list(background or []))[: len(texts)])
    i, j = np.triu_indices(len(texts), k=1)
    hits = sims[i, j] >= threshold
    pairs = [(int(a), int(b), float(s)) for a, b, s in zip(i[hits], j[hits], sims[i, j][hits])]
    return sorted(pairs, key=lambda p: (-p[2], p[0], p[1]))


def within_cell_similarities(scenarios: list[Scenario]) -> dict[tuple, list[tuple[float, str, str]]]:
    """Every within-cell pair's similarity (IDF over all scenarios given): cell -> [(sim, id_a, id_b)]."""
    ordered = sorted(scenarios, key=lambda s: s.id)
    sims = _cosines(tfidf_matrix([s.template for s in ordered]))
    by_cell: dict[tuple, list[int]] = defaultdict(list)
    for index, s in enumerate(ordered):
        by_cell[s.cell].append(index)
    return {cell: [(float(sims[a, b]), ordered[a].id, ordered[b].id)
                   for n, a in enumerate(idx) for b in idx[n + 1:]] for cell, idx in by_cell.items()}


def max_similarity_per_cell(scenarios: list[Scenario]) -> dict[tuple, tuple[float, str | None, str | None]]:
    """cell -> (highest within-cell similarity, id_a, id_b); (0.0, None, None) for a one-scenario cell."""
    return {cell: max(pairs, default=(0.0, None, None))
            for cell, pairs in within_cell_similarities(scenarios).items()}


def set_similarities(scenarios: list[Scenario], threshold: float = SET_THRESHOLD
                     ) -> tuple[list[tuple[float, str, str]], tuple[float, str | None, str | None], int]:
    """All pairs of the whole set (IDF over it): (pairs at or above threshold as (sim, id_a, id_b), most
    similar first; the most similar pair; the number of pairs compared)."""
    ordered = sorted(scenarios, key=lambda s: s.id)
    if len(ordered) < 2:
        return [], (0.0, None, None), 0
    sims = _cosines(tfidf_matrix([s.template for s in ordered]))
    i, j = np.triu_indices(len(ordered), k=1)
    values = sims[i, j]
    top = int(np.argmax(values))
    hits = [(float(values[k]), ordered[i[k]].id, ordered[j[k]].id) for k in np.flatnonzero(values >= threshold)]
    best = (float(values[top]), ordered[i[top]].id, ordered[j[top]].id)
    return sorted(hits, key=lambda h: (-h[0], h[1], h[2])), best, len(values)
