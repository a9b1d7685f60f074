"""GLUE's metrics (frozen_sweep.evaluate.scores) against values worked out by hand: F1 of the positive class and
macro-F1, Matthews correlation (binary and multiclass), Pearson, Spearman with ties, and the degenerate cases, where
each is 0 rather than NaN (a stop metric must compare)."""

import math

import numpy as np
import pytest

from frozen_sweep.evaluate.scores import (
    average_ranks,
    label_metrics,
    macro_f1,
    mcc,
    mse,
    number_metrics,
    pearson,
    positive_f1,
    spearman,
)  # fmt: skip

GOLD = [1, 1, 1, 0, 0, 0, 0, 1]
PREDICTED = [1, 1, 0, 0, 0, 1, 0, 1]  # tp 3, fn 1, fp 1, tn 3


def test_binary_f1_is_the_positive_class_and_macro_f1_the_mean_of_both():
    assert positive_f1(PREDICTED, GOLD) == pytest.approx(2 * 3 / (2 * 3 + 1 + 1))  # 0.75
    assert macro_f1(PREDICTED, GOLD, 2) == pytest.approx((0.75 + 0.75) / 2)
    skewed = [1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 0, 0]  # gold, predicted: tp 4, fp 2, tn 2
    assert positive_f1(skewed[1], skewed[0]) == pytest.approx(8 / 10)
    assert macro_f1(skewed[1], skewed[0], 2) == pytest.approx((8 / 10 + 4 / 6) / 2)
    metrics = label_metrics(np.array(skewed[1]), np.array(skewed[0]), 2)
    assert metrics["f1"] == pytest.approx(0.8) and metrics["macro_f1"] == pytest.approx((0.8 + 4 / 6) / 2)
    assert positive_f1([0, 0], [0, 0]) == 0.0  # the positive class neither given nor guessed


def test_more_than_two_labels_f1_is_macro_f1():
    gold, predicted = np.array([0, 0, 1, 1, 2]), np.array([0, 1, 1, 1, 0])
    # class 0: tp 1, fp 1, fn 1 → 0.5; class 1: tp 2, fp 1 → 0.8; class 2: fn 1 → 0; class 3 absent
    assert macro_f1(predicted, gold, 4) == pytest.approx((0.5 + 0.8 + 0.0) / 3)
    metrics = label_metrics(predicted, gold, 4)
    assert metrics["f1"] == metrics["macro_f1"] == pytest.approx(1.3 / 3) and metrics["accuracy"] == 0.6


def test_matthews_correlation_binary_multiclass_and_undefined():
    # binary: (tp·tn − fp·fn) / √((tp+fp)(tp+fn)(tn+fp)(tn+fn)) = (9 − 1) / √(4·4·4·4) = 0.5
    assert mcc(PREDICTED, GOLD, 2) == pytest.approx(0.5)
    assert mcc(GOLD, GOLD, 2) == pytest.approx(1.0) and mcc([1 - g for g in GOLD], GOLD, 2) == pytest.approx(-1.0)
    # multiclass: c = 3 correct of s = 5; t = (2, 2, 1), p = (2, 3, 0): (3·5 − 10) / √((25 − 13)(25 − 9))
    gold, predicted = [0, 0, 1, 1, 2], [0, 1, 1, 1, 0]
    assert mcc(predicted, gold, 3) == pytest.approx(5 / math.sqrt(12 * 16))
    assert mcc([1, 1, 1, 1], [0, 1, 0, 1], 2) == 0.0  # one class predicted throughout: undefined, 0 (as GLUE's CoLA)
    assert mcc([0, 1], [1, 1], 2) == 0.0  # one class given


def test_pearson_and_spearman_by_hand_with_ties():
    x, y = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 5.0, 9.0]
    # x − x̄ = (−1.5, −.5, .5, 1.5), y − ȳ = (−3, −1, 0, 4): Σ = 4.5 + .5 + 0 + 6 = 11; √(5 · 26)
    assert pearson(x, y) == pytest.approx(11 / math.sqrt(5 * 26))
    assert pearson(x, [-v for v in y]) == pytest.approx(-11 / math.sqrt(5 * 26))
    assert spearman(x, y) == pytest.approx(1.0)  # monotone: ranks agree, whatever the spacing
    assert average_ranks([10, 20, 20, 5, 20]).tolist() == [2.0, 4.0, 4.0, 1.0, 4.0]  # ties share ranks 3, 4, 5
    # ranks of a: (1, 2.5, 2.5, 4), of b: (1, 2, 3, 4): Pearson of the ranks; a − ā = (−1.5, 0, 0, 1.5),
    # b − b̄ = (−1.5, −.5, .5, 1.5): Σ = 4.5, √(4.5 · 5)
    a, b = [0.1, 0.5, 0.5, 3.0], [1.0, 2.0, 3.0, 4.0]
    assert spearman(a, b) == pytest.approx(4.5 / math.sqrt(4.5 * 5))
    assert spearman(a, b) != pytest.approx(pearson(a, b))  # ranks, not values


def test_correlations_of_a_constant_are_zero_and_mse_is_the_mean_squared_difference():
    assert pearson([2.0, 2.0, 2.0], [1.0, 2.0, 3.0]) == 0.0 and spearman([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]) == 0.0
    assert pearson([1.0], [2.0]) == 0.0
    assert mse([1.0, 2.0, 4.0], [1.0, 0.0, 1.0]) == pytest.approx((0 + 4 + 9) / 3)
    metrics = number_metrics(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.5]))
    assert set(metrics) == {"mse", "pearson", "spearman"} and metrics["spearman"] == pytest.approx(1.0)
