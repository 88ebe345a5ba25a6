//! Labels (policy names, sweep points, run labels) turned into parts of
//! file and directory names. One place, so every output names its files the
//! same way and none can produce `.`, `..` or a path separator.

/// `s` with every character other than ASCII letters, digits, `-`, `_` and
/// `.` replaced by `_`, leading and trailing dots removed (so a label can
/// never name `.` or `..`), at most 60 characters (a label is one part of a
/// longer file name).
pub fn file_safe(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    t.trim_matches('.').chars().take(60).collect()
}

/// `s` in kebab case for figure file names: runs of anything other than
/// ASCII letters and digits become one `-`, none at either end
/// (`"Libra+$ (budget)"` → `"Libra-budget"`).
pub fn kebab(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_safe_keeps_names_and_refuses_paths() {
        assert_eq!(file_safe("libra+$"), "libra__");
        assert_eq!(file_safe("0.5"), "0.5");
        assert_eq!(file_safe("../etc/passwd"), "_etc_passwd");
        assert_eq!(file_safe(".."), "");
        assert_eq!(file_safe(&"x".repeat(100)).len(), 60);
    }

    #[test]
    fn kebab_joins_words_with_one_dash() {
        assert_eq!(kebab("Libra+$ (budget)"), "Libra-budget");
        assert_eq!(kebab("--a  b--"), "a-b");
        assert_eq!(kebab("+++"), "");
    }
}
