//! The validation's measures: mean absolute percentage error and Spearman's
//! rank correlation.

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
}
