"""The input and the result shared by every categorical rater model.

Labels are three parallel integer arrays, one entry per label given: the unit labelled (an
output of an item, or an item; numbered 0..n_items-1), the rater (0..n_raters-1) and the
class chosen (0..n_classes-1, in the rubric's order of choices). Everything downstream is
vectorised over these arrays: sums over labels are np.bincount, never a Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from scipy import sparse

EPS = 1e-10  # probabilities are clipped here before a log (crowd-kit's _EPS, so fits compare equal)


class LabelError(ValueError):
    """Labels that no model can take (Dawid & Skene 1979's models need codes from 0): the message
    names the array and the first bad entry."""


@dataclass(frozen=True)
class Labels:
    item: np.ndarray
    rater: np.ndarray
    label: np.ndarray
    n_items: int
    n_raters: int
    n_classes: int

    @property
    def n(self) -> int:
        return int(self.item.size)

    def votes(self) -> np.ndarray:
        """(n_items, n_classes) count of each class per unit."""
        return np.bincount(self.item * self.n_classes + self.label,
                           minlength=self.n_items * self.n_classes).reshape(self.n_items, self.n_classes).astype(float)

    @cached_property
    def incidence(self) -> sparse.csr_matrix:
        """(n_items, n_raters * n_classes): how often unit i got class l from rater r, at column
        r * n_classes + l. Every model whose parameters depend on (rater, class) alone sums over a
        unit's labels as one sparse product with a (rater x class, ...) table."""
        cells = self.rater * self.n_classes + self.label
        return sparse.csr_matrix((np.ones(self.n), (self.item, cells)),
                                 shape=(self.n_items, self.n_raters * self.n_classes))

    @cached_property
    def incidence_t(self) -> sparse.csr_matrix:
        return self.incidence.T.tocsr()

    def per_item(self, values: np.ndarray) -> np.ndarray:
        """Sum over each unit's labels of a (n, n_classes) array -> (n_items, n_classes)."""
        out = np.empty((self.n_items, values.shape[1]))
        for c in range(values.shape[1]):  # a loop over classes, not labels
            out[:, c] = np.bincount(self.item, weights=values[:, c], minlength=self.n_items)
        return out

    def per_rater(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.rater, weights=values, minlength=self.n_raters)

    def rater_counts(self) -> np.ndarray:
        return np.bincount(self.rater, minlength=self.n_raters)


def int_array(name: str, values: Any) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1:
        raise LabelError(f"{name}: expected a one-dimensional array, got shape {a.shape}")
    if a.size and a.dtype.kind == "f":
        bad = ~np.isfinite(a) | (a != np.round(a))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise LabelError(f"{name}[{k}] = {a[k].item()!r}: expected a whole number")
    elif a.size and a.dtype.kind not in "iub":
        raise LabelError(f"{name}: expected integers, got {a.dtype}")
    a = a.astype(np.int64)
    if a.size and a.min() < 0:
        k = int(np.flatnonzero(a < 0)[0])
        raise LabelError(f"{name}[{k}] = {a[k]}: expected a number from 0")
    return a


def label_data(items: Any, raters: Any, labels: Any, *, n_classes: int | None = None,
               n_items: int | None = None, n_raters: int | None = None) -> Labels:
    """Validate three parallel arrays into Labels, the (unit, rater, class) triples of Dawid & Skene
    (1979); counts default to the largest code + 1.

    Raises LabelError naming the array and index of the first bad entry (a negative or
    fractional code, a class outside n_classes, arrays of different lengths)."""
    item, rater, label = (int_array(n, v) for n, v in (("items", items), ("raters", raters), ("labels", labels)))
    if not (item.size == rater.size == label.size):
        raise LabelError(f"items, raters and labels differ in length ({item.size}, {rater.size}, {label.size})")
    if item.size == 0:
        raise LabelError("no labels: a rater model needs at least one label")

    def count(name: str, a: np.ndarray, given: int | None) -> int:
        top = int(a.max()) + 1
        if given is None:
            return top
        if top > given:
            k = int(np.flatnonzero(a >= given)[0])
            raise LabelError(f"{name}[{k}] = {a[k]}: outside 0..{given - 1}")
        return int(given)

    k = count("labels", label, n_classes)
    if k < 2:
        raise LabelError("labels: a rater model needs at least two classes (pass n_classes)")
    return Labels(item, rater, label, count("items", item, n_items), count("raters", rater, n_raters), k)


@dataclass(frozen=True)
class LabelModel:
    """One fitted model of categorical labels (the layout of Dawid & Skene 1979: posteriors per unit,
    estimates per rater).

    posteriors[i, c]: probability that unit i's true class is c.
    rater_accuracy[r]: the model's own estimate of P(rater r's label is the true class) (NaN for a
    rater without labels); rater_agreement[r]: mean posterior of the classes r chose (how far the
    fitted consensus agrees with r), comparable across methods.
    rater / item: the method's own estimates (confusion matrices, skills, abilities, difficulties,
    competence and spamming strategy), each an array over raters / units.
    class_prior[c]: the share of units whose true class is c (fitted, or fixed uniform).
    log_likelihood: the marginal log-likelihood of the observed labels under the fitted parameters
    (the latent true class summed out); n_params counts the free parameters, for BIC.
    """

    method: str
    posteriors: np.ndarray
    rater_accuracy: np.ndarray
    rater_agreement: np.ndarray
    rater_n: np.ndarray
    class_prior: np.ndarray
    log_likelihood: float
    n_params: int
    n_labels: int
    iterations: int
    converged: bool
    rater: dict[str, np.ndarray] = field(default_factory=dict)
    item: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def labels(self) -> np.ndarray:
        """Most probable class per unit (the lowest class index on an exact tie)."""
        return self.posteriors.argmax(axis=1)

    @property
    def bic(self) -> float:
        """Schwarz (1978): -2 log L + p log n, n the number of labels; lower fits better."""
        return float(-2.0 * self.log_likelihood + self.n_params * np.log(self.n_labels))


def agreement(data: Labels, posteriors: np.ndarray) -> np.ndarray:
    """Per rater, the mean posterior probability of the classes they chose (NaN without labels)."""
    n = data.rater_counts()
    with np.errstate(invalid="ignore", divide="ignore"):
        return data.per_rater(posteriors[data.item, data.label]) / np.where(n > 0, n, np.nan)


def normalise_log(log_joint: np.ndarray) -> tuple[np.ndarray, float]:
    """(posteriors, marginal log-likelihood) from log p(class, labels of the unit) per unit."""
    top = log_joint.max(axis=1, keepdims=True)
    post = np.exp(log_joint - top)
    total = post.sum(axis=1, keepdims=True)
    post /= total
    return post, float(np.sum(np.log(total)) + np.sum(top))


def finish(method: str, data: Labels, posteriors: np.ndarray, accuracy: np.ndarray, prior: np.ndarray,
           log_likelihood: float, n_params: int, iterations: int, converged: bool, rater: dict | None = None,
           item: dict | None = None) -> LabelModel:
    n = data.rater_counts()
    return LabelModel(method, posteriors, np.where(n > 0, accuracy, np.nan), agreement(data, posteriors), n,
                      np.asarray(prior, dtype=float), float(log_likelihood), int(n_params), data.n, int(iterations), bool(converged),
                      rater or {}, item or {})
