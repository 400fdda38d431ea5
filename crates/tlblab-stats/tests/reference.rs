//! Known values.
//!
//! Unless a test says otherwise, the expected values were computed with numpy 2.4.6 and scipy
//! 1.17.1 (`np.mean`, `np.std(ddof=1)`, `scipy.stats.sem`, `np.median`,
//! `scipy.stats.median_abs_deviation`, `np.percentile` (default method "linear" = type 7),
//! `scipy.stats.hmean`/`gmean`, `scipy.stats.ttest_ind(equal_var=False)`,
//! `scipy.stats.mannwhitneyu(alternative="two-sided", method=...)`, `scipy.stats.t.interval`)
//! and pasted here as literals.

use tlblab_stats::{
    bootstrap_ci, bootstrap_ci_two_sample, compare, geometric_mean, harmonic_mean, mann_whitney_u,
    mean, mean_std, modified_z_scores, outliers, percentile, ratio_to_baseline,
    ratio_to_baseline_bootstrap, welch_t_test, CompareOptions, Group, IntervalMethod, PValueMethod,
    RelativeChange, Speedup, StatsError, Summary, Verdict, DEFAULT_OUTLIER_THRESHOLD,
    HYPERFINE_OUTLIER_THRESHOLD,
};

/// Asserts `|actual − expected| ≤ tol · max(1, |expected|)`.
#[track_caller]
fn close(actual: f64, expected: f64, tol: f64) {
    assert!(
        (actual - expected).abs() <= tol * expected.abs().max(1.0),
        "{actual} != {expected} (tolerance {tol})"
    );
}

/// Relative tolerance for the reference values of the tests.
const TOL: f64 = 1e-9;

// ---------------------------------------------------------------------------------------------
// Summary

const CLASSIC: [f64; 8] = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];

#[test]
fn summary_of_the_classic_example() {
    // By hand: mean 40/8 = 5; Σ(x − 5)² = 32, so s = √(32/7); sorted deviations from the median
    // 4.5 are 0.5 ×5, 2.5, 2.5, 4.5, so the MAD is 0.5.
    let s = Summary::of(&CLASSIC).unwrap();
    assert_eq!(s.n, 8);
    assert_eq!(s.mean, 5.0);
    close(s.stddev, (32.0f64 / 7.0).sqrt(), 1e-15);
    close(s.stddev, 2.138089935299395, TOL); // np.std(ddof=1)
    close(s.sem, 0.7559289460184544, TOL); // scipy.stats.sem
    close(s.cv.unwrap(), 0.427617987059879, TOL);
    assert_eq!(s.median, 4.5);
    assert_eq!(s.mad, 0.5);
    close(s.mad_normal(), 0.741301109252801, 1e-4); // scipy uses 1/Φ⁻¹(3/4), we use 1.4826
    assert_eq!((s.min, s.max), (2.0, 9.0));
    // np.percentile, method="linear" (type 7).
    for (p, expected) in [
        (0.0, 2.0),
        (10.0, 3.4000000000000004),
        (25.0, 4.0),
        (50.0, 4.5),
        (75.0, 5.5),
        (90.0, 7.6),
        (99.0, 8.86),
        (100.0, 9.0),
    ] {
        close(s.percentile(p).unwrap(), expected, 1e-12);
    }
    close(harmonic_mean(&CLASSIC).unwrap(), 4.201750729470613, TOL);
    close(geometric_mean(&CLASSIC).unwrap(), 4.603215596046736, TOL);
}

#[test]
fn summary_of_unsorted_values_with_negatives() {
    let y = [3.1, -1.5, 0.25, 10.0, 7.75, 2.0, 2.0];
    let s = Summary::of(&y).unwrap();
    close(s.mean, 3.3714285714285714, 1e-12);
    close(s.stddev, 4.091032585918574, 1e-12);
    assert_eq!((s.median, s.mad), (2.0, 1.75));
    for (p, expected) in
        [(5.0, -0.9749999999999999), (33.3, 1.9964999999999997), (62.5, 2.825), (95.0, 9.325)]
    {
        close(s.percentile(p).unwrap(), expected, 1e-12);
        close(percentile(&y, p).unwrap(), expected, 1e-12);
    }
    assert_eq!(s.sorted_samples(), &[-1.5, 0.25, 2.0, 2.0, 3.1, 7.75, 10.0]);
}

#[test]
fn summary_of_one_sample() {
    let s = Summary::of(&[3.5]).unwrap();
    assert_eq!((s.n, s.mean, s.stddev, s.sem, s.median, s.mad), (1, 3.5, 0.0, 0.0, 3.5, 0.0));
    assert_eq!(s.cv, Some(0.0));
    assert_eq!(s.percentile(37.0).unwrap(), 3.5);
    assert_eq!(Summary::of(&[0.0, 0.0]).unwrap().cv, None);
}

#[test]
fn constant_samples_have_exactly_that_mean() {
    // 0.1 + 0.1 + 0.1 = 0.30000000000000004 and naively / 3 = 0.10000000000000002.
    assert_eq!(mean(&[0.1, 0.1, 0.1]).unwrap(), 0.1);
    let s = Summary::of(&[0.1; 7]).unwrap();
    assert_eq!((s.mean, s.stddev), (0.1, 0.0));
}

#[test]
fn summary_errors_name_the_offending_sample() {
    assert_eq!(Summary::of(&[]), Err(StatsError::Empty));
    assert!(matches!(
        Summary::of(&[1.0, 2.0, f64::NAN, f64::INFINITY]),
        Err(StatsError::NonFinite { index: 2, value }) if value.is_nan()
    ));
    assert_eq!(
        Summary::of(&[1.0, f64::NEG_INFINITY]),
        Err(StatsError::NonFinite { index: 1, value: f64::NEG_INFINITY })
    );
    let s = Summary::of(&CLASSIC).unwrap();
    assert_eq!(s.percentile(100.5), Err(StatsError::InvalidPercentile(100.5)));
    assert!(s.percentile(f64::NAN).is_err());
    assert_eq!(
        harmonic_mean(&[1.0, 2.0, 0.0]),
        Err(StatsError::NonPositive { index: 2, value: 0.0 })
    );
    assert_eq!(
        geometric_mean(&[-1.0, 2.0]),
        Err(StatsError::NonPositive { index: 0, value: -1.0 })
    );
    assert_eq!(
        StatsError::NonFinite { index: 3, value: f64::NAN }.to_string(),
        "sample 3 is not finite (NaN)"
    );
}

#[test]
fn summary_serializes_without_the_samples() {
    let json = serde_json::to_value(Summary::of(&CLASSIC).unwrap()).unwrap();
    assert_eq!(json["mean"], 5.0);
    assert_eq!(json["median"], 4.5);
    assert!(json.get("sorted").is_none());
}

#[test]
fn summary_read_back_keeps_the_statistics_but_not_the_samples() {
    let s = Summary::of(&CLASSIC).unwrap();
    let text = serde_json::to_string(&s).unwrap();
    let back: Summary = serde_json::from_str(&text).unwrap();
    assert_eq!((back.n, back.mean, back.median, back.mad), (8, 5.0, 4.5, 0.5));
    assert_eq!((back.stddev, back.sem, back.cv), (s.stddev, s.sem, s.cv));
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
    // No samples: a percentile is refused rather than made up.
    assert!(back.sorted_samples().is_empty());
    assert_eq!(back.percentile(50.0), Err(StatsError::Empty));
    assert_eq!(s.percentile(50.0), Ok(4.5));
}

#[test]
fn mean_std_of_seeds() {
    let m = mean_std(&CLASSIC).unwrap();
    assert_eq!((m.n, m.mean), (8, 5.0));
    close(m.stddev, 2.138089935299395, TOL);
    close(m.sem, 0.7559289460184544, TOL);
    let one = mean_std(&[4.0]).unwrap();
    assert_eq!((one.mean, one.stddev), (4.0, 0.0));
}

// ---------------------------------------------------------------------------------------------
// Welch's t-test: the three examples of Wikipedia's "Welch's t-test" article, which gives
// (t, df, p) ≈ (−2.46, 25.0, 0.021), (−1.57, 9.9, 0.149) and (−2.22, 24.5, 0.036); the precise
// values are scipy's ttest_ind(a1, a2, equal_var=False).

const W1: ([f64; 15], [f64; 15]) = (
    [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4],
    [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4],
);
const W2: ([f64; 10], [f64; 20]) = (
    [17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8],
    [
        21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8, 20.7, 21.7, 21.5, 22.5, 23.6,
        21.5, 22.5, 23.5, 21.5, 21.8,
    ],
);
const W3: ([f64; 10], [f64; 20]) = (
    [19.8, 20.4, 19.6, 17.8, 18.5, 18.9, 18.3, 18.9, 19.5, 22.0],
    [
        28.2, 26.6, 20.1, 23.3, 25.2, 22.1, 17.7, 27.6, 20.6, 13.7, 23.2, 17.5, 20.6, 18.0, 23.9,
        21.6, 24.3, 20.4, 23.9, 13.3,
    ],
);

type WelchCase<'a> = (&'a [f64], &'a [f64], f64, f64, f64);

#[test]
fn welch_matches_wikipedia_and_scipy() {
    // (a, b, t, df, p)
    let cases: [WelchCase; 4] = [
        (&W1.0, &W1.1, -2.455356398286006, 24.988529290231416, 0.021378001462866992),
        (&W2.0, &W2.1, -1.5654335235985037, 9.904741248650831, 0.14884169660532817),
        (&W3.0, &W3.1, -2.225512039969852, 24.524634944257343, 0.035484530830010394),
        (
            &[1.0, 2.0, 3.0],
            &[1.0, 2.0, 3.0, 4.0, 5.0, 60.0],
            -1.1012034080591893,
            5.036695725912716,
            0.32062953512645415,
        ),
    ];
    for (a, b, t, df, p) in cases {
        let r = welch_t_test(a, b).unwrap();
        close(r.t, t, TOL);
        close(r.df, df, TOL);
        close(r.p_two_sided, p, TOL);
        // Swapping the groups flips t and keeps the rest.
        let s = welch_t_test(b, a).unwrap();
        close(s.t, -t, TOL);
        close(s.df, df, TOL);
        close(s.p_two_sided, p, TOL);
    }
}

#[test]
fn welch_with_zero_variances() {
    let same = welch_t_test(&[3.0, 3.0, 3.0], &[3.0, 3.0]).unwrap();
    assert_eq!((same.t, same.df, same.p_two_sided), (0.0, 3.0, 1.0));
    let differ = welch_t_test(&[3.0, 3.0, 3.0], &[4.0, 4.0]).unwrap();
    assert_eq!((differ.t, differ.df, differ.p_two_sided), (f64::NEG_INFINITY, 3.0, 0.0));
    // One group constant: df reduces to n − 1 of the other.
    let one = welch_t_test(&[3.0, 3.0, 3.0], &[1.0, 2.0, 4.0, 6.0]).unwrap();
    close(one.df, 3.0, 1e-12);
    assert!(one.p_two_sided > 0.0 && one.p_two_sided < 1.0);
}

#[test]
fn welch_needs_two_samples_per_group() {
    assert_eq!(
        welch_t_test(&[1.0, 2.0], &[1.0]),
        Err(StatsError::InGroup {
            group: Group::B,
            source: Box::new(StatsError::TooFewSamples { needed: 2, got: 1 })
        })
    );
    let err = welch_t_test(&[], &[1.0, 2.0]).unwrap_err();
    assert_eq!(err.to_string(), "group a: no samples");
}

// ---------------------------------------------------------------------------------------------
// Mann–Whitney U: scipy.stats.mannwhitneyu(a, b, alternative="two-sided", method=...).

#[test]
fn mann_whitney_exact_small() {
    let a = [1.1, 3.4, 2.2, 5.0, 0.3];
    let b = [4.1, 6.2, 7.7, 2.9, 8.8, 5.5];
    let r = mann_whitney_u(&a, &b).unwrap();
    assert_eq!(r.method, PValueMethod::Exact);
    assert_eq!(r.u, 3.0);
    close(r.p_two_sided, 0.030303030303030304, TOL); // method="exact" (= 14/462)
    close(2.0 * 7.0 / 462.0, 0.030303030303030304, 1e-15);
    // The asymptotic p-value would be 0.03576376659097789; check z against it.
    close(2.0 * normal_sf(r.z.abs()), 0.03576376659097789, 1e-7);
    assert!(r.z < 0.0, "a tends to be smaller");
    let s = mann_whitney_u(&b, &a).unwrap();
    assert_eq!(s.u, 27.0);
    close(s.p_two_sided, r.p_two_sided, 1e-15);
}

#[test]
fn mann_whitney_exact_medium() {
    let a =
        [12.1, 14.3, 11.8, 15.2, 13.3, 16.7, 12.9, 14.8, 13.9, 17.4, 15.9, 11.2, 18.3, 13.6, 14.1];
    let b = [15.5, 16.1, 17.9, 14.6, 19.2, 18.8, 16.4, 20.1, 17.2, 15.0, 19.7, 16.9];
    let r = mann_whitney_u(&a, &b).unwrap();
    assert_eq!((r.u, r.method), (26.0, PValueMethod::Exact));
    close(r.p_two_sided, 0.0011557847336552411, TOL); // method="exact"
    close(2.0 * normal_sf(r.z.abs()), 0.0019451430555051561, 1e-7); // method="asymptotic"
}

#[test]
fn mann_whitney_asymptotic_with_ties() {
    let a = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0, 7.0];
    let b = [2.0, 3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 6.0, 8.0, 9.0];
    let r = mann_whitney_u(&a, &b).unwrap();
    assert_eq!((r.u, r.method), (21.5, PValueMethod::Asymptotic));
    close(r.p_two_sided, 0.05780446915029127, TOL);

    let r = mann_whitney_u(&[1.0, 2.0, 2.0, 3.0], &[2.0, 3.0, 4.0]).unwrap();
    assert_eq!((r.u, r.method), (2.5, PValueMethod::Asymptotic));
    close(r.p_two_sided, 0.2663799233424825, TOL);
}

#[test]
fn mann_whitney_asymptotic_for_large_groups() {
    // np.round(np.linspace(0, 10, 25)**1.3, 6) and np.round(np.linspace(1.05, 11.1, 30)**1.3, 6):
    // no ties, but 25 and 30 > 20 values.
    let a = [
        0.0, 0.320424, 0.788977, 1.336543, 1.942689, 2.596488, 3.290956, 4.021174, 4.783462,
        5.574946, 6.393304, 7.236622, 8.103283, 8.991906, 9.901291, 10.830388, 11.778266,
        12.744095, 13.727127, 14.726687, 15.742162, 16.772989, 17.818653, 18.878678, 19.952623,
    ];
    let b = [
        1.065482, 1.54374, 2.059302, 2.606736, 3.182207, 3.782842, 4.406393, 5.051046, 5.7153,
        6.39789, 7.097735, 7.813893, 8.545541, 9.291949, 10.052465, 10.826504, 11.613536,
        12.413079, 13.224691, 14.047968, 14.882536, 15.72805, 16.584188, 17.450652, 18.327162,
        19.213457, 20.10929, 21.01443, 21.928659, 22.851771,
    ];
    let r = mann_whitney_u(&a, &b).unwrap();
    assert_eq!((r.u, r.method), (301.0, PValueMethod::Asymptotic));
    close(r.p_two_sided, 0.21409758812447743, TOL); // method="asymptotic"
                                                    // (scipy's method="exact" would give 0.21598951251487003.)
}

#[test]
fn mann_whitney_all_tied() {
    let r = mann_whitney_u(&[2.0, 2.0], &[2.0, 2.0, 2.0]).unwrap();
    assert_eq!((r.u, r.z, r.p_two_sided), (3.0, 0.0, 1.0));
    let single = mann_whitney_u(&[1.0], &[2.0]).unwrap();
    assert_eq!((single.u, single.p_two_sided, single.method), (0.0, 1.0, PValueMethod::Exact));
}

/// Upper tail of the standard normal (statrs, as in the crate itself).
fn normal_sf(x: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    Normal::standard().sf(x)
}

// ---------------------------------------------------------------------------------------------
// Outliers

#[test]
fn one_outlier_among_benchmark_runs() {
    let runs = [10.1, 10.3, 10.2, 10.4, 10.2, 13.0, 10.3];
    // median 10.3, MAD 0.1: M = 0.6745·(x − 10.3)/0.1 (computed in numpy).
    let expected =
        [-1.348999999999988, 0.0, -0.6745, 0.674499999999988, -0.6745, 18.211499999999734, 0.0];
    for (m, e) in modified_z_scores(&runs).unwrap().iter().zip(expected) {
        close(*m, e, 1e-9);
    }
    assert_eq!(outliers(&runs, DEFAULT_OUTLIER_THRESHOLD).unwrap(), vec![5]);
    assert_eq!(outliers(&runs, 20.0).unwrap(), Vec::<usize>::new());
    assert_eq!(outliers(&runs, 1.0).unwrap(), vec![0, 5]);
    assert_eq!(outliers(&runs, 0.0), Err(StatsError::InvalidThreshold(0.0)));
}

#[test]
fn hyperfines_own_outlier_examples() {
    // From hyperfine's src/outlier_detection.rs tests, which flag exactly one value in each.
    // [-0.2, 0, 0.2, 4]: median 0.1, MAD 0.2, M(4) = 0.6745 · 3.9 / 0.2 = 13.15275.
    let xs = [-0.2, 0.0, 0.2, 4.0];
    close(modified_z_scores(&xs).unwrap()[3], 13.15275, 1e-9);
    assert_eq!(outliers(&xs, HYPERFINE_OUTLIER_THRESHOLD).unwrap(), vec![3]);
    assert_eq!(outliers(&xs, DEFAULT_OUTLIER_THRESHOLD).unwrap(), vec![3]);
    // [0.5, 0.30, 0.29, 0.31, 0.30]: median 0.30, MAD 0.01, M(0.5) = 0.6745 · 0.2 / 0.01 = 13.49.
    let ys = [0.5, 0.30, 0.29, 0.31, 0.30];
    close(modified_z_scores(&ys).unwrap()[0], 13.49, 1e-9);
    assert_eq!(outliers(&ys, HYPERFINE_OUTLIER_THRESHOLD).unwrap(), vec![0]);
    // And none among [-0.2, 0, 0.2].
    assert!(outliers(&[-0.2, 0.0, 0.2], DEFAULT_OUTLIER_THRESHOLD).unwrap().is_empty());
}

#[test]
fn outliers_when_the_mad_is_zero() {
    // More than half the values are equal, so the MAD is 0 and the MeanAD fallback applies:
    // MeanAD = 95/7, M = 95 / (1.253314 · 95/7) = 7 / 1.253314.
    let xs = [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 100.0];
    let m = modified_z_scores(&xs).unwrap();
    close(m[6], 7.0 / 1.253314, 1e-12);
    assert!(m[..6].iter().all(|&z| z == 0.0));
    assert_eq!(outliers(&xs, DEFAULT_OUTLIER_THRESHOLD).unwrap(), vec![6]);
    // All equal: no scale at all, every score is 0.
    assert_eq!(modified_z_scores(&[2.0; 4]).unwrap(), vec![0.0; 4]);
    assert!(outliers(&[2.0; 4], DEFAULT_OUTLIER_THRESHOLD).unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Bootstrap

fn mean_of(s: &[f64]) -> f64 {
    mean(s).unwrap()
}

#[test]
fn bootstrap_is_deterministic_per_seed() {
    let xs: Vec<f64> = (1..=30).map(|i| (i as f64 * 0.7).sin() * 3.0 + 10.0).collect();
    let a = bootstrap_ci(&xs, mean_of, 2000, 0.95, 1).unwrap();
    let b = bootstrap_ci(&xs, mean_of, 2000, 0.95, 1).unwrap();
    assert_eq!(a, b);
    let c = bootstrap_ci(&xs, mean_of, 2000, 0.95, 2).unwrap();
    assert_ne!(a, c, "another seed, other resamples");
    assert_eq!(a.point, mean_of(&xs));
    assert!(a.low < a.point && a.point < a.high);
    assert_eq!(a.confidence, 0.95);
    // A 90 % interval lies inside the 95 % one of the same resamples.
    let narrow = bootstrap_ci(&xs, mean_of, 2000, 0.90, 1).unwrap();
    assert!(a.low <= narrow.low && narrow.high <= a.high);
}

#[test]
fn bootstrap_of_one_to_ten_is_about_the_normal_interval() {
    // mean 5.5, s = 3.03, s/√10 = 0.957: a normal 95 % interval is 5.5 ± 1.88. The bootstrap's
    // plug-in spread is a bit smaller (√(9/10)), so expect roughly 5.5 ± 1.78.
    let xs: Vec<f64> = (1..=10).map(f64::from).collect();
    let ci = bootstrap_ci(&xs, mean_of, 20_000, 0.95, 2024).unwrap();
    assert!((3.5..4.0).contains(&ci.low), "{ci:?}");
    assert!((7.0..7.5).contains(&ci.high), "{ci:?}");
    close(ci.point, 5.5, 1e-15);
}

#[test]
fn bootstrap_of_a_constant_is_degenerate() {
    let ci = bootstrap_ci(&[0.1; 9], mean_of, 500, 0.95, 3).unwrap();
    assert_eq!((ci.low, ci.point, ci.high), (0.1, 0.1, 0.1));
    assert_eq!(ci.width(), 0.0);
}

#[test]
fn bootstrap_coverage_is_roughly_nominal() {
    // 200 data sets of 40 draws from an exponential distribution with mean 1 (inverse CDF of a
    // deterministic PCG stream, independent of the crate's own): the 90 % interval of the mean
    // should cover 1 in about 90 % of them (the percentile bootstrap under-covers a bit for
    // skewed data; accept 80–97 %).
    use rand_pcg::rand_core::{Rng, SeedableRng};
    let mut rng = rand_pcg::Pcg64::seed_from_u64(99);
    let mut covered = 0;
    for k in 0..200 {
        let xs: Vec<f64> = (0..40)
            .map(|_| {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                -(1.0 - u).ln()
            })
            .collect();
        let ci = bootstrap_ci(&xs, mean_of, 1000, 0.90, k).unwrap();
        covered += usize::from(ci.contains(1.0));
    }
    assert!((160..=194).contains(&covered), "covered {covered} of 200");
}

#[test]
fn bootstrap_errors() {
    assert_eq!(bootstrap_ci(&[1.0, 2.0], mean_of, 0, 0.95, 0), Err(StatsError::NoResamples));
    assert_eq!(
        bootstrap_ci(&[1.0, 2.0], mean_of, 10, 1.0, 0),
        Err(StatsError::InvalidConfidence(1.0))
    );
    assert_eq!(bootstrap_ci(&[], mean_of, 10, 0.9, 0), Err(StatsError::Empty));
    assert_eq!(
        bootstrap_ci(&[1.0, 2.0], |_| f64::NAN, 10, 0.9, 0).unwrap_err().to_string(),
        "the statistic is not finite (NaN) on the original samples"
    );
    assert_eq!(
        RelativeChange::bootstrap(&[-1.0, 1.0], &[1.0, 2.0], 10, 0.9, 0),
        Err(StatsError::ZeroBaseline)
    );
    assert!(matches!(
        RelativeChange::bootstrap(&[1.0, 2.0], &[1.0, f64::NAN], 10, 0.9, 0),
        Err(StatsError::InGroup { group: Group::B, .. })
    ));
}

#[test]
fn relative_change_of_means() {
    let a = [10.0, 10.5, 9.5, 10.2, 9.8, 10.0, 10.1, 9.9];
    let b: Vec<f64> = a.iter().map(|x| x * 1.2).collect();
    let rc = RelativeChange::bootstrap(&a, &b, 5000, 0.95, 11).unwrap();
    close(rc.estimate, 0.2, 1e-12);
    assert_eq!(rc.estimate, rc.ci.point);
    assert!(rc.ci.contains(0.2) && rc.ci.low > 0.1 && rc.ci.high < 0.3, "{rc:?}");
    // The two-sample bootstrap with the same statistic gives the same interval.
    let same =
        bootstrap_ci_two_sample(&a, &b, |a, b| mean_of(b) / mean_of(a) - 1.0, 5000, 0.95, 11)
            .unwrap();
    assert_eq!(same, rc.ci);
}

// ---------------------------------------------------------------------------------------------
// Multi-seed ratios to a baseline

#[test]
fn paired_ratio_to_baseline_with_t_interval() {
    // Ratios [1.02, 0.97/0.95, 1.10, 1.05/1.01, 0.99]; numpy mean / std(ddof=1), and
    // the interval is on the log scale: l = ln(ratios), exp(mean(l) ± t·std(l, ddof=1)/√5),
    // t.ppf(0.975, 4) = 2.7764451051977934 (a t interval of the raw ratios would be
    // 0.98336…, 1.08490…).
    let policy = [1.02, 0.97, 1.10, 1.05, 0.99];
    let baseline = [1.00, 0.95, 1.00, 1.01, 1.00];
    let r = ratio_to_baseline(&policy, &baseline, 0.95).unwrap();
    assert_eq!(r.method, IntervalMethod::LogStudentT);
    assert_eq!(r.ratios.n, 5);
    close(r.ratios.mean, 1.0341313183949974, 1e-12);
    close(r.ratios.stddev, 0.0408868942894497, 1e-12);
    close(r.ci.low, 0.984609581719678, 1e-9);
    close(r.ci.high, 1.084809761618601, 1e-9);
    close(r.ci.point, 1.0334960501292274, 1e-12); // the geometric mean of the ratios

    let boot = ratio_to_baseline_bootstrap(&policy, &baseline, 4000, 0.95, 5).unwrap();
    assert_eq!(boot.method, IntervalMethod::Bootstrap);
    assert_eq!(boot.ratios, r.ratios);
    // With 5 seeds the bootstrap interval is narrower than the t interval.
    assert!(boot.ci.low > r.ci.low && boot.ci.high < r.ci.high, "{boot:?}");
    assert!(boot.ci.contains(boot.ci.point));
}

#[test]
fn ratio_to_baseline_errors() {
    assert_eq!(
        ratio_to_baseline(&[1.0, 2.0], &[1.0], 0.95),
        Err(StatsError::LengthMismatch { a: 1, b: 2 })
    );
    assert_eq!(ratio_to_baseline(&[1.0, 2.0], &[1.0, 0.0], 0.95), Err(StatsError::ZeroBaseline));
    assert_eq!(
        ratio_to_baseline(&[1.0], &[2.0], 0.95),
        Err(StatsError::TooFewSamples { needed: 2, got: 1 })
    );
    assert_eq!(ratio_to_baseline_bootstrap(&[1.0], &[2.0], 10, 0.95, 0).unwrap().ci.point, 0.5);
}

// ---------------------------------------------------------------------------------------------
// A/B verdicts

/// `n` values `centre · (1 + spread · wᵢ)` with a fixed zero-mean wiggle `wᵢ ∈ [−1, 1]`.
fn runs(n: usize, centre: f64, spread: f64, phase: f64) -> Vec<f64> {
    (0..n).map(|i| centre * (1.0 + spread * (i as f64 * 2.399 + phase).sin())).collect()
}

fn opts(lower_is_better: bool) -> CompareOptions {
    CompareOptions { lower_is_better, seed: 17, resamples: 5000, ..CompareOptions::default() }
}

#[test]
fn clear_regression_and_improvement() {
    let a = runs(20, 100.0, 0.02, 0.0);
    let b = runs(20, 110.0, 0.02, 1.0);
    // Times: 10 % slower is a regression.
    let c = compare(&a, &b, &opts(true)).unwrap();
    assert!(c.welch.p_two_sided < 1e-10);
    assert!(c.change.ci.low > 0.05 && c.change.ci.high < 0.15, "{:?}", c.change);
    assert_eq!(c.verdict, Verdict::Regressed);
    // The other way round it is an improvement.
    assert_eq!(compare(&b, &a, &opts(true)).unwrap().verdict, Verdict::Improved);
    // Throughput: higher is better, so the same numbers flip.
    assert_eq!(compare(&a, &b, &opts(false)).unwrap().verdict, Verdict::Improved);
    assert_eq!(compare(&b, &a, &opts(false)).unwrap().verdict, Verdict::Regressed);
    assert!(c.mann_whitney.p_two_sided < 1e-6);
    assert_eq!((c.summary_a.n, c.summary_b.n), (20, 20));
}

#[test]
fn significant_but_tiny_change_is_noise() {
    // +0.3 % with very little spread: Welch is highly significant, but the whole interval lies
    // inside ±1 %.
    let a = runs(50, 100.0, 0.001, 0.0);
    let b = runs(50, 100.3, 0.001, 0.5);
    let c = compare(&a, &b, &opts(true)).unwrap();
    assert!(c.welch.p_two_sided < 1e-6, "{:?}", c.welch);
    assert!(c.change.ci.high < 0.01 && c.change.ci.low > 0.0, "{:?}", c.change);
    assert_eq!(c.verdict, Verdict::WithinNoise);
    // With a smaller noise band the same data is a regression.
    let strict = CompareOptions { noise_threshold: 0.001, ..opts(true) };
    assert_eq!(compare(&a, &b, &strict).unwrap().verdict, Verdict::Regressed);
}

#[test]
fn large_but_noisy_change_is_not_significant() {
    // +20 % on average, but runs spread by ±60 %.
    let a = runs(6, 100.0, 0.6, 0.0);
    let b = runs(6, 120.0, 0.6, 2.0);
    let c = compare(&a, &b, &opts(true)).unwrap();
    assert!(c.change.estimate > 0.1, "{:?}", c.change);
    assert!(c.welch.p_two_sided >= 0.05, "{:?}", c.welch);
    assert_eq!(c.verdict, Verdict::NoSignificantChange);
    assert_eq!(compare(&a, &b, &opts(false)).unwrap().verdict, Verdict::NoSignificantChange);
}

#[test]
fn speedup_in_hyperfine_style() {
    // Means 2 and 1, standard deviations √0.08 and √0.02, so both coefficients of variation are
    // √0.02: b is 2 ± 2·√(0.02 + 0.02) = 2 ± 0.4 times faster.
    let a = Summary::of(&[1.8, 2.2]).unwrap();
    let b = Summary::of(&[0.9, 1.1]).unwrap();
    let s = Speedup::of(&a, &b, true).unwrap();
    assert_eq!(s.faster, Group::B);
    close(s.ratio, 2.0, 1e-12);
    close(s.stddev, 0.4, 1e-12);
    // Higher is better: a (mean 2) is twice as fast.
    let t = Speedup::of(&a, &b, false).unwrap();
    assert_eq!((t.faster, t.ratio), (Group::A, 2.0));
    close(t.stddev, s.stddev, 1e-12);
    assert_eq!(Speedup::of(&a, &Summary::of(&[0.0]).unwrap(), true), None);
}

#[test]
fn compare_errors_and_serialization() {
    assert!(matches!(
        compare(&[1.0], &[1.0, 2.0], &CompareOptions::default()),
        Err(StatsError::InGroup { group: Group::A, .. })
    ));
    let bad = CompareOptions { noise_threshold: -0.1, ..CompareOptions::default() };
    assert_eq!(
        compare(&[1.0, 2.0], &[1.0, 2.0], &bad),
        Err(StatsError::InvalidNoiseThreshold(-0.1))
    );
    let c = compare(&[1.0, 2.0, 3.0], &[2.5, 3.5, 4.5], &CompareOptions::default()).unwrap();
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["verdict"], "NoSignificantChange");
    assert_eq!(json["mann_whitney"]["method"], "Exact");
    assert!(json["change"]["ci"]["low"].is_number());
    // Read back, everything but the summaries' samples survives.
    let back: tlblab_stats::Comparison = serde_json::from_value(json.clone()).unwrap();
    assert_eq!((back.verdict, back.welch, back.change), (c.verdict, c.welch, c.change));
    assert_eq!(serde_json::to_value(&back).unwrap(), json);
}

/// Two constant groups that differ have t = ±∞ (the documented convention); JSON has no
/// infinity, so it is written as "inf"/"-inf" and read back with its sign.
#[test]
fn an_infinite_t_survives_json() {
    let c = compare(&[2.0, 2.0, 2.0], &[1.0, 1.0, 1.0], &CompareOptions::default()).unwrap();
    assert_eq!(c.welch.t, f64::INFINITY);
    let json = serde_json::to_string(&c).unwrap();
    assert!(json.contains(r#""t":"inf""#), "{json}");
    let back: tlblab_stats::Comparison = serde_json::from_str(&json).unwrap();
    assert_eq!(back.welch, c.welch);
    let c = compare(&[1.0, 1.0], &[2.0, 2.0], &CompareOptions::default()).unwrap();
    let back: tlblab_stats::Comparison =
        serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(back.welch.t, f64::NEG_INFINITY);
    let bad = serde_json::to_string(&c).unwrap().replace(r#""t":"-inf""#, r#""t":"big""#);
    let err = serde_json::from_str::<tlblab_stats::Comparison>(&bad).unwrap_err().to_string();
    assert!(err.contains(r#"a number, "inf" or "-inf""#), "{err}");
}

#[test]
fn verdict_display() {
    assert_eq!(Verdict::Improved.to_string(), "improved");
    assert_eq!(Verdict::Regressed.to_string(), "regressed");
    assert_eq!(Verdict::NoSignificantChange.to_string(), "not significant");
    assert_eq!(Verdict::WithinNoise.to_string(), "within noise");
}
