//! Properties that hold for every input.

use proptest::prelude::*;
use tlblab_stats::{
    bootstrap_ci, mann_whitney_u, mean, modified_z_scores, percentile, welch_t_test,
    RelativeChange, Summary,
};

/// Samples of realistic magnitudes, rounded to a grid (0.25) so that ties occur often.
fn samples(max_len: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(
        prop_oneof![(-4000i32..4000).prop_map(|k| f64::from(k) * 0.25), -1e6f64..1e6,],
        1..max_len,
    )
}

proptest! {
    #[test]
    fn mean_is_within_min_and_max(xs in samples(60)) {
        let s = Summary::of(&xs).unwrap();
        prop_assert!(s.min <= s.mean && s.mean <= s.max, "{s:?}");
        prop_assert!(s.min <= s.median && s.median <= s.max);
        prop_assert_eq!(mean(&xs).unwrap(), s.mean);
    }

    #[test]
    fn spread_is_never_negative(xs in samples(60)) {
        let s = Summary::of(&xs).unwrap();
        prop_assert!(s.stddev >= 0.0 && s.sem >= 0.0 && s.mad >= 0.0);
        prop_assert!(s.stddev.is_finite());
        if xs.len() == 1 {
            prop_assert_eq!(s.stddev, 0.0);
        }
    }

    #[test]
    fn percentile_is_monotone_in_p(xs in samples(60), p in 0.0f64..=100.0, q in 0.0f64..=100.0) {
        let s = Summary::of(&xs).unwrap();
        let (lo, hi) = if p <= q { (p, q) } else { (q, p) };
        prop_assert!(s.percentile(lo).unwrap() <= s.percentile(hi).unwrap());
        prop_assert_eq!(s.percentile(0.0).unwrap(), s.min);
        prop_assert_eq!(s.percentile(100.0).unwrap(), s.max);
        prop_assert_eq!(s.percentile(50.0).unwrap(), s.median);
        prop_assert_eq!(percentile(&xs, p).unwrap(), s.percentile(p).unwrap());
    }

    #[test]
    fn mann_whitney_u_statistics_add_up(a in samples(30), b in samples(30)) {
        let ab = mann_whitney_u(&a, &b).unwrap();
        let ba = mann_whitney_u(&b, &a).unwrap();
        prop_assert_eq!(ab.u + ba.u, (a.len() * b.len()) as f64);
        prop_assert!((0.0..=1.0).contains(&ab.p_two_sided), "{ab:?}");
        prop_assert!((ab.p_two_sided - ba.p_two_sided).abs() < 1e-12);
        prop_assert_eq!(ab.z, -ba.z);
    }

    #[test]
    fn welch_p_value_is_a_probability(a in samples(30), b in samples(30)) {
        prop_assume!(a.len() >= 2 && b.len() >= 2);
        let r = welch_t_test(&a, &b).unwrap();
        prop_assert!((0.0..=1.0).contains(&r.p_two_sided), "{r:?}");
        prop_assert!(!r.df.is_nan() && r.df > 0.0, "{r:?}");
    }

    #[test]
    fn modified_z_scores_are_finite(xs in samples(40)) {
        let m = modified_z_scores(&xs).unwrap();
        prop_assert_eq!(m.len(), xs.len());
        prop_assert!(m.iter().all(|z| z.is_finite()));
    }
}

proptest! {
    // Bootstraps are slower: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn bootstrap_of_a_constant_is_that_constant(
        c in -1e6f64..1e6, n in 1usize..40, seed in any::<u64>(), confidence in 0.5f64..0.999,
    ) {
        let xs = vec![c; n];
        let ci = bootstrap_ci(&xs, |s| mean(s).unwrap(), 200, confidence, seed).unwrap();
        prop_assert_eq!((ci.low, ci.point, ci.high), (c, c, c));
    }

    #[test]
    fn bootstrap_is_ordered_and_reproducible(xs in samples(40), seed in any::<u64>()) {
        let stat = |s: &[f64]| mean(s).unwrap();
        let ci = bootstrap_ci(&xs, stat, 300, 0.9, seed).unwrap();
        prop_assert!(ci.low <= ci.high);
        let s = Summary::of(&xs).unwrap();
        prop_assert!(s.min <= ci.low && ci.high <= s.max);
        prop_assert_eq!(ci, bootstrap_ci(&xs, stat, 300, 0.9, seed).unwrap());
    }

    #[test]
    fn relative_change_interval_is_ordered(
        a in prop::collection::vec(1.0f64..100.0, 2..30),
        b in prop::collection::vec(1.0f64..100.0, 2..30),
        seed in any::<u64>(),
    ) {
        let rc = RelativeChange::bootstrap(&a, &b, 300, 0.95, seed).unwrap();
        prop_assert!(rc.ci.low <= rc.ci.high);
        prop_assert!(rc.ci.low > -1.0, "positive data cannot drop by 100 %");
        let s = (Summary::of(&a).unwrap(), Summary::of(&b).unwrap());
        let extreme = (s.1.max / s.0.min - 1.0, s.1.min / s.0.max - 1.0);
        prop_assert!(extreme.1 <= rc.ci.low && rc.ci.high <= extreme.0);
    }
}
