//! Two-sample hypothesis tests: Welch's t-test and the Mann–Whitney U test.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::beta::beta_reg;

use crate::error::{check_len, Group, StatsError};
use crate::summary::{mean_unchecked, variance_unchecked};

/// The largest group size for which [`mann_whitney_u`] computes an exact p-value.
pub const MANN_WHITNEY_EXACT_MAX_N: usize = 20;

/// Result of [`welch_t_test`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TTest {
    /// `(mean(a) − mean(b)) / √(s²ₐ/nₐ + s²_b/n_b)` (scipy's sign convention). ±∞ for two
    /// constant groups that differ, written to JSON as the strings `"inf"` and `"-inf"` (JSON
    /// numbers cannot be infinite, and `null` would lose the sign).
    #[serde(with = "infinite_as_string")]
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value, `P(|T| ≥ |t|)` for `T` Student-t with `df` degrees of freedom.
    pub p_two_sided: f64,
}

/// Welch's unequal-variances t-test of "the means of `a` and `b` are equal" (Welch 1947).
///
/// ```text
/// t  = (x̄ₐ − x̄_b) / √(vₐ + v_b)            vᵢ = s²ᵢ / nᵢ  (sample variances, n − 1)
/// df = (vₐ + v_b)² / (vₐ²/(nₐ − 1) + v_b²/(n_b − 1))
/// p  = 2·P(T_df ≥ |t|) = I_{df/(df + t²)}(df/2, 1/2)
/// ```
///
/// `I` is the regularized incomplete beta function (from `statrs`), used directly so that small
/// p-values keep their relative precision. The results match scipy's
/// `ttest_ind(a, b, equal_var=False)`.
///
/// If both samples have zero variance the statistic is undefined (scipy returns NaN); here `df`
/// is `nₐ + n_b − 2`, and if the means are equal `t = 0`, `p = 1`, otherwise `t = ±∞`, `p = 0`
/// (two constant groups with different values differ for certain).
///
/// Errors: [`StatsError::InGroup`] wrapping [`StatsError::TooFewSamples`] (each group needs ≥ 2
/// samples), [`StatsError::Empty`] or [`StatsError::NonFinite`].
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Result<TTest, StatsError> {
    check_len(a, 2).map_err(|e| e.in_group(Group::A))?;
    check_len(b, 2).map_err(|e| e.in_group(Group::B))?;
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ma, mb) = (mean_unchecked(a), mean_unchecked(b));
    let va = variance_unchecked(a, ma) / na;
    let vb = variance_unchecked(b, mb) / nb;
    let se2 = va + vb;
    if se2 == 0.0 {
        let diff = ma - mb;
        return Ok(TTest {
            t: if diff == 0.0 { 0.0 } else { f64::INFINITY.copysign(diff) },
            df: na + nb - 2.0,
            p_two_sided: if diff == 0.0 { 1.0 } else { 0.0 },
        });
    }
    let t = (ma - mb) / se2.sqrt();
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    Ok(TTest { t, df, p_two_sided: student_t_two_sided_p(t, df) })
}

/// `P(|T| ≥ |t|)` for Student's t with `df` degrees of freedom.
pub(crate) fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_infinite() {
        return 0.0;
    }
    beta_reg(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

/// How [`mann_whitney_u`] computed its p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PValueMethod {
    /// From the exact null distribution of U (no ties, both groups ≤
    /// [`MANN_WHITNEY_EXACT_MAX_N`]).
    Exact,
    /// From the normal approximation with tie correction and continuity correction.
    Asymptotic,
}

/// Result of [`mann_whitney_u`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// The U statistic of group `a`: the number of pairs `(x ∈ a, y ∈ b)` with `x > y`, ties
    /// counting ½. `U_b = nₐ·n_b − U_a`.
    pub u: f64,
    /// The normal-approximation z-score of `u` (tie- and continuity-corrected; positive when `a`
    /// tends to be larger), reported whichever method gave the p-value; 0 when all values tie.
    pub z: f64,
    /// Two-sided p-value.
    pub p_two_sided: f64,
    /// How `p_two_sided` was computed.
    pub method: PValueMethod,
}

/// The Mann–Whitney U test (Wilcoxon rank-sum test) of "`a` and `b` come from the same
/// distribution", against the two-sided alternative that one is stochastically larger.
///
/// Both groups are ranked together, tied values getting the average of their ranks, and
/// `U_a = R_a − nₐ(nₐ + 1)/2` where `R_a` is the rank sum of `a`. With `μ = nₐn_b/2`:
///
/// * **Exact** (used when there are no ties and both `nₐ, n_b ≤ 20`): the null distribution of
///   U is counted by the recurrence `f(m, n, u) = f(m − 1, n, u − n) + f(m, n − 1, u)` (Mann &
///   Whitney 1947) and `p = min(1, 2·P(U ≥ max(U_a, U_b)))`.
/// * **Asymptotic** (otherwise): `σ² = nₐn_b/12 · ((N + 1) − Σ(t³ − t)/(N(N − 1)))` with `t`
///   the sizes of the groups of ties and `N = nₐ + n_b`;
///   `z = sign(U_a − μ)·max(|U_a − μ| − ½, 0)/σ` (continuity correction) and `p = 2·Φ(−|z|)`.
///   If every value ties (`σ = 0`), `z = 0` and `p = 1`.
///
/// These match scipy's `mannwhitneyu(a, b, alternative="two-sided", method="exact")` and
/// `method="asymptotic"` respectively (scipy's `"auto"` switches to the asymptotic method
/// already above 8 samples).
///
/// Errors: [`StatsError::InGroup`] wrapping [`StatsError::Empty`] or [`StatsError::NonFinite`].
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Result<MannWhitney, StatsError> {
    check_len(a, 1).map_err(|e| e.in_group(Group::A))?;
    check_len(b, 1).map_err(|e| e.in_group(Group::B))?;
    let (na, nb) = (a.len(), b.len());
    let n = na + nb;

    // Rank the pooled sample; `true` marks values of `a`.
    let mut pooled: Vec<(f64, bool)> =
        a.iter().map(|&x| (x, true)).chain(b.iter().map(|&y| (y, false))).collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0; // Σ(t³ − t)
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && pooled[end].0 == pooled[start].0 {
            end += 1;
        }
        // Ranks start + 1 ..= end share their average.
        let avg_rank = (start + 1 + end) as f64 / 2.0;
        let in_a = pooled[start..end].iter().filter(|p| p.1).count();
        rank_sum_a += avg_rank * in_a as f64;
        let t = (end - start) as f64;
        tie_term += t * t * t - t;
        start = end;
    }
    let u = rank_sum_a - (na * (na + 1)) as f64 / 2.0;

    let (naf, nbf, nf) = (na as f64, nb as f64, n as f64);
    let mu = naf * nbf / 2.0;
    let sigma2 =
        if n > 1 { naf * nbf / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0))) } else { 0.0 };
    let z = if sigma2 > 0.0 {
        let d = u - mu;
        (d.abs() - 0.5).max(0.0).copysign(d) / sigma2.sqrt()
    } else {
        0.0
    };
    let asymptotic_p =
        if sigma2 > 0.0 { (2.0 * Normal::standard().cdf(-z.abs())).min(1.0) } else { 1.0 };

    let (p_two_sided, method) =
        if tie_term == 0.0 && na <= MANN_WHITNEY_EXACT_MAX_N && nb <= MANN_WHITNEY_EXACT_MAX_N {
            let u_max = u.max(naf * nbf - u);
            // Without ties U is an integer.
            let p = 2.0 * exact_u_sf(na, nb, u_max.round() as usize);
            (p.min(1.0), PValueMethod::Exact)
        } else {
            (asymptotic_p, PValueMethod::Asymptotic)
        };
    Ok(MannWhitney { u, z, p_two_sided, method })
}

/// `P(U ≥ u)` under the null hypothesis for groups of `m` and `n` values without ties.
fn exact_u_sf(m: usize, n: usize, u: usize) -> f64 {
    let counts = exact_u_counts(m, n);
    let total: u64 = counts.iter().sum();
    let upper: u64 = counts.iter().skip(u).sum();
    upper as f64 / total as f64
}

/// `counts[u]` = the number of arrangements of `m` values of one group and `n` of the other (in
/// rank order) whose U statistic is `u`, for `u = 0 ..= m·n`. They sum to `C(m + n, m)`, at
/// most `C(40, 20) ≈ 1.4·10¹¹` here, so `u64` is exact.
fn exact_u_counts(m: usize, n: usize) -> Vec<u64> {
    // f[i][j] is the distribution for groups of i and j values, built up by the recurrence
    // f(i, j, u) = f(i − 1, j, u − j) + f(i, j − 1, u): the largest value belongs either to the
    // first group (beating all j values of the second) or to the second (beating nothing).
    let mut prev: Vec<Vec<u64>> = (0..=n).map(|_| vec![1]).collect(); // i = 0: only u = 0
    for i in 1..=m {
        let mut cur: Vec<Vec<u64>> = Vec::with_capacity(n + 1);
        cur.push(vec![1]); // j = 0
        for j in 1..=n {
            let mut f = vec![0u64; i * j + 1];
            for (u, &c) in prev[j].iter().enumerate() {
                f[u + j] += c;
            }
            for (u, &c) in cur[j - 1].iter().enumerate() {
                f[u] += c;
            }
            cur.push(f);
        }
        prev = cur;
    }
    prev.swap_remove(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_counts_are_binomial_coefficients() {
        // C(5 + 6, 5) = 462 arrangements; U is symmetric around 15.
        let c = exact_u_counts(5, 6);
        assert_eq!(c.len(), 31);
        assert_eq!(c.iter().sum::<u64>(), 462);
        assert!(c.iter().zip(c.iter().rev()).all(|(x, y)| x == y));
        assert_eq!(exact_u_counts(20, 20).iter().sum::<u64>(), 137_846_528_820);
        // Small case by hand: m = 1, n = 2 → U ∈ {0, 1, 2}, one way each.
        assert_eq!(exact_u_counts(1, 2), vec![1, 1, 1]);
    }
}

/// An `f64` that may be infinite, in serde: finite values as numbers, ±∞ as `"inf"`/`"-inf"`.
mod infinite_as_string {
    use serde::{de, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        match *x {
            f64::INFINITY => s.serialize_str("inf"),
            f64::NEG_INFINITY => s.serialize_str("-inf"),
            x => s.serialize_f64(x),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum NumberOrText {
            Number(f64),
            Text(String),
        }
        match NumberOrText::deserialize(d)? {
            NumberOrText::Number(x) => Ok(x),
            NumberOrText::Text(t) if t == "inf" => Ok(f64::INFINITY),
            NumberOrText::Text(t) if t == "-inf" => Ok(f64::NEG_INFINITY),
            NumberOrText::Text(t) => Err(de::Error::invalid_value(
                de::Unexpected::Str(&t),
                &"a number, \"inf\" or \"-inf\"",
            )),
        }
    }
}
