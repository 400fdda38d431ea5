//! Suggestions for mistyped names (scenarios, policies, machines, studies, mechanisms), so that
//! every "unknown …" error can say what was probably meant, as cargo and git do.

/// `; did you mean "x"?` for the candidate closest to `name` (Levenshtein distance, by
/// characters), when it is at most two edits away and fewer than half of `name`'s characters:
/// `pingpon` suggests `pingpong`, but `s9` does not suggest `s1`, nor `tlb` `mlp`. Empty when
/// nothing is that close. Ties go to the earlier candidate.
///
/// ```
/// use tlblab_types::names::did_you_mean;
/// assert_eq!(did_you_mean("pingpon", ["madv-migrate", "pingpong"]), "; did you mean \"pingpong\"?");
/// assert_eq!(did_you_mean("s9", ["s1", "s2"]), "");
/// ```
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let len = name.chars().count();
    candidates
        .into_iter()
        .enumerate()
        .map(|(i, c)| (strsim::levenshtein(name, c), i, c))
        .filter(|&(d, _, c)| d > 0 && d <= 2 && 2 * d < len && !c.is_empty())
        .min()
        .map_or(String::new(), |(_, _, c)| format!("; did you mean {c:?}?"))
}

/// How an error names a preset or a policy: `name`, and `(file)` after it when it was read from
/// one (a built-in has none), so that a refusal found after reading names the file.
///
/// ```
/// use tlblab_types::names::with_file;
/// assert_eq!(with_file("x", Some("p.toml")), "x (p.toml)");
/// assert_eq!(with_file("linux-6.18", None), "linux-6.18");
/// ```
pub fn with_file(name: &str, file: Option<&str>) -> String {
    match file {
        Some(file) => format!("{name} ({file})"),
        None => name.to_string(),
    }
}

/// The names in a `known` list as the errors print it (`a, b (short), c`): every word that is
/// not a separator, short forms included.
pub fn listed(known: &str) -> impl Iterator<Item = &str> {
    known
        .split(|c: char| c == ',' || c == '(' || c == ')' || c.is_whitespace())
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_suggested_and_far_ones_are_not() {
        let known = "linux-4.13, linux-4.14, linux-6.18";
        assert_eq!(did_you_mean("linux-6.1", listed(known)), "; did you mean \"linux-6.18\"?");
        assert_eq!(
            did_you_mean("skylak", ["skylake", "skylake-kvm"]),
            "; did you mean \"skylake\"?"
        );
        assert_eq!(
            did_you_mean("idle-state", ["guest", "idle-states"]),
            "; did you mean \"idle-states\"?"
        );
        assert_eq!(did_you_mean("tlb", ["mlp", "guest"]), "");
        assert_eq!(did_you_mean("pcid", ["mlp", "guest"]), "");
        assert_eq!(
            did_you_mean("s1-pt", listed("s1-pti (s1), s2-pcid (s2)")),
            "; did you mean \"s1-pti\"?"
        );
    }

    #[test]
    fn listed_reads_names_and_short_forms() {
        let names: Vec<_> = listed("s1-pti (s1), s2-pcid (s2)").collect();
        assert_eq!(names, ["s1-pti", "s1", "s2-pcid", "s2"]);
    }
}
