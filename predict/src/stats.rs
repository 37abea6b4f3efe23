//! The validation's measures: mean absolute percentage error, Spearman's
//! rank correlation, and the order of the pairs that measurement can tell
//! apart.

/// Mean absolute percentage error of `(predicted, measured)` pairs, in
/// percent; `None` without pairs or with a measured value of zero.
pub fn mape(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.is_empty() || pairs.iter().any(|(_, m)| *m == 0.0) {
        return None;
    }
    let sum: f64 = pairs.iter().map(|(p, m)| ((p - m) / m).abs()).sum();
    Some(100.0 * sum / pairs.len() as f64)
}

/// Ranks from 1, ties sharing their mean rank.
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = rank;
        }
        i = j + 1;
    }
    ranks
}

/// Spearman's rank correlation of `(predicted, measured)` pairs (Pearson's
/// of their ranks); `None` for fewer than 3 pairs or a constant side.
pub fn spearman(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < 3 {
        return None;
    }
    let x = ranks(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
    let y = ranks(&pairs.iter().map(|p| p.1).collect::<Vec<_>>());
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let cov: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let vx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let vy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    (vx > 0.0 && vy > 0.0).then(|| cov / (vx * vy).sqrt())
}

/// Order agreement on the pairs the measurement can decide: over every pair
/// of `(predicted, measured)` points whose measured values differ by more
/// than the fraction `apart` of the smaller, how many the predictions
/// order the same way (a predicted tie counts half), and how many such
/// pairs there are; `None` when there are none.
///
/// Spearman's correlation ranks schedules whose times differ by less than
/// run-to-run noise as surely as any others (SYRK's nine schedules span
/// 0.3%), so a model that cannot know a noise-made order is charged for it;
/// this counts only the orders a rerun would keep.
pub fn ordered_pairs(points: &[(f64, f64)], apart: f64) -> Option<(f64, usize)> {
    let mut agreeing = 0.0;
    let mut total = 0;
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            if let Some(pair) = Decided::of(*a, *b, apart) {
                total += 1;
                agreeing += pair.ordered();
            }
        }
    }
    (total > 0).then_some((agreeing, total))
}

/// Whether `x` and `y` differ by no more than the fraction `fraction` of the
/// smaller.
fn within(x: f64, y: f64, fraction: f64) -> bool {
    x.max(y) <= x.min(y) * (1.0 + fraction)
}

/// A pair of `(predicted, measured)` points `a`, `b` that the measurement
/// decides (the one definition of "apart" and of how a tie counts).
struct Decided {
    /// `a` was measured slower.
    a_slower: bool,
    /// `a` was predicted slower: 1, 0, or 0.5 for a predicted tie.
    a_predicted_slower: f64,
}

impl Decided {
    /// `None` when the measured values differ by no more than the fraction
    /// `apart` of the smaller.
    fn of(a: (f64, f64), b: (f64, f64), apart: f64) -> Option<Decided> {
        let a_slower = a.1 > b.1;
        (!within(a.1, b.1, apart)).then_some(Decided {
            a_slower,
            a_predicted_slower: if a.0 == b.0 {
                0.5
            } else if a.0 > b.0 {
                1.0
            } else {
                0.0
            },
        })
    }

    /// 1 if the prediction orders the pair as measured, 0.5 for a tie.
    fn ordered(&self) -> f64 {
        if self.a_slower {
            self.a_predicted_slower
        } else {
            1.0 - self.a_predicted_slower
        }
    }
}

/// [`ordered_pairs`] across two groups of one kernel's schedules: over
/// every pair of a point of `first` and a point of `second` measured more
/// than the fraction `apart` of the smaller apart.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Between {
    /// Such pairs.
    pub pairs: usize,
    /// Of them, those where `first`'s point was measured slower.
    pub first_slower: usize,
    /// Of them, those where it was predicted slower (a predicted tie counts
    /// half).
    pub first_predicted_slower: f64,
    /// Of them, those the prediction orders as measured (a tie counts half).
    pub ordered: f64,
    /// Of them, those predicted within the fraction [`NEAR`] of each other:
    /// orders the model cannot tell.
    pub near: usize,
    /// Of those, the pairs where `first`'s point was measured slower.
    pub near_first_slower: usize,
}

/// Predictions closer than this fraction of the smaller are as good as a
/// tie: the model's terms do not tell them apart.
pub const NEAR: f64 = 0.005;

impl Between {
    /// Every pair of `(predicted, measured)` points `first` x `second`.
    pub fn of(first: &[(f64, f64)], second: &[(f64, f64)], apart: f64) -> Between {
        let mut between = Between::default();
        for &a in first {
            for &b in second {
                if let Some(pair) = Decided::of(a, b, apart) {
                    between.pairs += 1;
                    between.first_slower += usize::from(pair.a_slower);
                    between.first_predicted_slower += pair.a_predicted_slower;
                    between.ordered += pair.ordered();
                    if within(a.0, b.0, NEAR) {
                        between.near += 1;
                        between.near_first_slower += usize::from(pair.a_slower);
                    }
                }
            }
        }
        between
    }
}

/// Both counts summed (over kernels).
impl std::ops::Add for Between {
    type Output = Between;

    fn add(self, other: Between) -> Between {
        Between {
            pairs: self.pairs + other.pairs,
            first_slower: self.first_slower + other.first_slower,
            first_predicted_slower: self.first_predicted_slower + other.first_predicted_slower,
            ordered: self.ordered + other.ordered,
            near: self.near + other.near,
            near_first_slower: self.near_first_slower + other.near_first_slower,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mape_of_known_pairs() {
        // 10% over and 30% under: 20%.
        let m = mape(&[(1.1, 1.0), (0.7, 1.0)]).unwrap();
        assert!((m - 20.0).abs() < 1e-9, "{m}");
        assert_eq!(mape(&[]), None);
    }

    #[test]
    fn spearman_orders() {
        let same = [(1.0, 10.0), (2.0, 20.0), (3.0, 25.0), (4.0, 400.0)];
        assert!((spearman(&same).unwrap() - 1.0).abs() < 1e-12);
        let reversed = [(4.0, 10.0), (3.0, 20.0), (2.0, 25.0), (1.0, 400.0)];
        assert!((spearman(&reversed).unwrap() + 1.0).abs() < 1e-12);
        // Ties share ranks; a constant side has no correlation.
        assert_eq!(spearman(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]), None);
    }

    #[test]
    fn only_pairs_measured_apart_are_ordered() {
        // Measured 1.00, 1.01 (within 2% of it), 1.50, 2.00: five pairs
        // apart by more than 2%; the prediction puts 1.01 below 1.50 and
        // 2.00 (right), 1.00 above both (wrong), and ties 1.50 and 2.00
        // (half).
        let points = [(1.6, 1.00), (1.0, 1.01), (1.5, 1.50), (1.5, 2.00)];
        assert_eq!(ordered_pairs(&points, 0.02), Some((2.5, 5)));
        // Nothing apart: no verdict.
        assert_eq!(ordered_pairs(&[(1.0, 1.0), (2.0, 1.01)], 0.02), None);
    }

    #[test]
    fn pairs_between_two_groups() {
        // First: measured 2.0 (predicted 1.0) and 1.005 (predicted 3.0);
        // second: measured 1.0 (predicted 1.0). The pair 1.005 / 1.0 is
        // within 2%; 2.0 against 1.0 is the first slower, predicted a tie.
        let first = [(1.0, 2.0), (3.0, 1.005)];
        let second = [(1.0, 1.0)];
        let b = Between::of(&first, &second, 0.02);
        assert_eq!(
            b,
            Between {
                pairs: 1,
                first_slower: 1,
                first_predicted_slower: 0.5,
                ordered: 0.5,
                near: 1,
                near_first_slower: 1,
            }
        );
        // Predicted 0.4% apart: near; 0.6% apart: told apart.
        let near = |predicted: f64| Between::of(&[(predicted, 2.0)], &[(1.0, 1.0)], 0.02).near;
        assert_eq!((near(1.004), near(1.006)), (1, 0));
        // Predicted faster where it was measured faster: ordered right.
        let b = Between::of(&[(1.0, 1.0)], &[(2.0, 3.0)], 0.02);
        assert_eq!((b.pairs, b.first_slower, b.ordered), (1, 0, 1.0));
        assert_eq!((b + b).pairs, 2);
        // ordered_pairs over both groups also counts the pair within
        // `first` (2.0 against 1.005, predicted the other way round).
        let all: Vec<(f64, f64)> = first.iter().chain(&second).copied().collect();
        assert_eq!(ordered_pairs(&all, 0.02), Some((0.5, 2)));
    }
}
