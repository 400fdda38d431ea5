//! Numbers as people read them: thousands grouped, decimals chosen for the magnitude, ratios
//! shown with enough decimals that a significant interval does not print as touching 1.

/// `1234567` as `1,234,567`: the same grouping as the studies' text output.
pub use tlblab_studies::text::group;

/// A signed integer with grouped thousands.
pub fn group_i(n: i64) -> String {
    if n < 0 {
        format!("-{}", group(n.unsigned_abs()))
    } else {
        group(n as u64)
    }
}

/// `x` with `decimals` decimals and grouped thousands (`12,345.68`); `-` for NaN or infinity.
pub fn fixed(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let s = format!("{:.*}", decimals, x.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let int = int.parse::<u64>().map_or_else(|_| int.to_string(), group);
    // A value that rounds to zero prints without a sign.
    let zero = s.bytes().all(|b| b == b'0' || b == b'.');
    let sign = if x < 0.0 && !zero { "-" } else { "" };
    match frac {
        Some(f) => format!("{sign}{int}.{f}"),
        None => format!("{sign}{int}"),
    }
}

/// Decimals that show about four significant digits of `x` (at most 6; 0 from 1,000 up).
pub fn decimals_for(x: f64) -> usize {
    if !x.is_finite() || x == 0.0 {
        return 2;
    }
    let magnitude = x.abs().log10().floor() as i64;
    (3 - magnitude).clamp(0, 6) as usize
}

/// `x` with about four significant digits (0 as `0`).
pub fn num(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    fixed(x, decimals_for(x))
}

/// `mean ± sd`, both with the mean's decimals (the sd's when the mean is 0).
pub fn mean_sd(mean: f64, sd: f64) -> String {
    if mean == 0.0 && sd == 0.0 {
        return "0 ± 0".into();
    }
    let d = decimals_for(if mean == 0.0 { sd } else { mean });
    format!("{} ± {}", fixed(mean, d), fixed(sd, d))
}

/// A ratio and its interval, `0.995 [0.994, 0.996]`, with enough decimals (3 to 6) that the
/// bounds of a significant interval do not print as 1.
pub fn ratio_ci(mean: f64, low: f64, high: f64, significant: bool) -> String {
    let show = |d: usize| format!("{mean:.d$} [{low:.d$}, {high:.d$}]");
    for d in 3..=6 {
        let one = format!("{:.d$}", 1.0);
        if !significant || (format!("{low:.d$}") != one && format!("{high:.d$}") != one) {
            return show(d);
        }
    }
    show(6)
}

/// A percentage with a sign, `+12.34%`.
pub fn signed_pct(fraction: f64) -> String {
    format!("{:+.2}%", fraction * 100.0)
}

/// A p-value: `0.0400`, or `3.1e-7` below 0.0001.
pub fn p_value(p: f64) -> String {
    if !p.is_finite() {
        "-".into()
    } else if p >= 1e-4 {
        format!("{p:.4}")
    } else {
        format!("{p:.1e}")
    }
}

/// An axis tick label: grouped, with the decimals the tick step needs; k from 10,000, M from a
/// million, G from a billion.
pub fn tick(v: f64, step: f64) -> String {
    let a = v.abs();
    let scaled = |div: f64, suffix: &str| {
        let d = if step / div >= 1.0 {
            0
        } else {
            (-(step / div).log10()).ceil().clamp(0.0, 6.0) as usize
        };
        format!("{}{suffix}", fixed(v / div, d))
    };
    if a >= 1e9 {
        scaled(1e9, "G")
    } else if a >= 1e6 {
        scaled(1e6, "M")
    } else if a >= 1e4 {
        scaled(1e3, "k")
    } else {
        let d = if step >= 1.0 || step <= 0.0 || !step.is_finite() {
            0
        } else {
            (-step.log10()).ceil().clamp(0.0, 6.0) as usize
        };
        fixed(v, d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(group_i(-1234), "-1,234");
        assert_eq!(fixed(12345.678, 2), "12,345.68");
        assert_eq!(fixed(-0.0001, 2), "0.00");
        assert_eq!(fixed(-1500.0, 0), "-1,500");
        assert_eq!(fixed(f64::NAN, 2), "-");
    }

    #[test]
    fn four_significant_digits_as_the_study_text_prints_them() {
        // The S1 text output prints 3.629, 0.1464, 22.26 and 17,237.7 (one more there).
        assert_eq!(num(3.6288899), "3.629");
        assert_eq!(num(0.14642964), "0.1464");
        assert_eq!(num(22.2611), "22.26");
        assert_eq!(num(17237.7), "17,238");
        assert_eq!(mean_sd(3.6288899, 0.0045214), "3.629 ± 0.005");
    }

    #[test]
    fn significant_ratio_never_prints_a_bound_of_one() {
        // 0.9995 rounds to 1.000 at 3 decimals, so 4 are used.
        assert_eq!(ratio_ci(0.9993, 0.99906, 0.99956, true), "0.9993 [0.9991, 0.9996]");
        // Not significant: 3 decimals whatever the bounds.
        assert_eq!(ratio_ci(1.0, 0.9996, 1.0004, false), "1.000 [1.000, 1.000]");
    }

    #[test]
    fn ticks_follow_the_step() {
        assert_eq!(tick(0.25, 0.05), "0.25");
        assert_eq!(tick(2.0, 0.5), "2.0");
        assert_eq!(tick(200.0, 50.0), "200");
        assert_eq!(tick(250000.0, 50000.0), "250k");
        assert_eq!(tick(1.5e6, 5e5), "1.5M");
        assert_eq!(p_value(0.04), "0.0400");
        assert_eq!(p_value(3.14e-7), "3.1e-7");
    }
}
