//! Reading a client's dotted version out of text: a `--version` answer, a package manifest's
//! `version`, a harness's version variable.

/// The first dotted version in `text` (`2.1.296 (Claude Code)`, `codex-cli 0.162.0-alpha.17.2`).
pub fn parse_version(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .map(|word| word.trim_start_matches('v'))
        .find(|word| {
            let mut parts = word.split(['-', '+']).next().unwrap_or("").split('.');
            let numeric = |part: Option<&str>| {
                part.is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
            };
            numeric(parts.next()) && numeric(parts.next())
        })
        .filter(|word| word.len() <= 64)
        .filter(|word| {
            word.chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-_+".contains(c))
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_table() {
        let table = [
            ("2.1.296 (Claude Code)\n", Some("2.1.296")),
            ("codex-cli 0.162.0-alpha.17.2\n", Some("0.162.0-alpha.17.2")),
            ("v20.11.1", Some("20.11.1")),
            ("Cursor 3.21.16", Some("3.21.16")),
            ("no version here", None),
            ("1", None),
            ("", None),
        ];
        for (text, expected) in table {
            assert_eq!(parse_version(text).as_deref(), expected, "{text}");
        }
    }
}
