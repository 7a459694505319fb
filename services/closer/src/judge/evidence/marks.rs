//! Marks by which a report says an item is finished without a sentence saying so: a checked
//! box or a tick, a table row carrying a commit hash or a status cell, a commit subject.
//!
//! Agents report finished work in these formats more often than in prose (a table keyed by
//! task, `| 1 | Add … | 871e5dd |`; `- [x] …`; `✓ lint`; "Commit: docs: update the GUI
//! section"; `` `6184fe5` Add Response Format header``). Each mark stands in for the completion
//! verb of its own item only; the item must still be about the commitment (the judge's rules 3
//! and 5), and every veto still applies.

/// Ticks that mark an item done.
const TICKS: &[char] = &['✓', '✔', '✅', '☑', '🟢'];

/// Crosses and open boxes that mark an item not done.
const CROSSES: &[char] = &['✗', '✘', '❌', '☐', '⏳', '🔴'];

/// Status cells that mark a table row done (lower-case, whole cell).
const DONE_CELLS: &[&str] = &[
    "done",
    "fixed",
    "complete",
    "completed",
    "implemented",
    "resolved",
    "merged",
    "pass",
    "passed",
    "passing",
    "shipped",
    "ok",
    "yes",
    "added",
    "updated",
    "removed",
    "terminé",
    "fait",
    "corrigé",
    "已完成",
    "完成",
];

/// Conventional-commit types (<https://www.conventionalcommits.org>) and the usual extras.
const COMMIT_TYPES: &[&str] = &[
    "feat", "fix", "docs", "doc", "refactor", "test", "tests", "chore", "perf", "build", "ci",
    "style", "revert",
];

/// A checklist mark at the start or end of an item: `Some(true)` done ("[x] …", "✓ …",
/// "… ✅"), `Some(false)` not done ("[ ] …", "❌ …"), `None` without one.
pub fn checklist(item: &str) -> Option<bool> {
    let trimmed = item.trim();
    let lowered = trimmed.to_lowercase();
    if lowered.starts_with("[x]") {
        return Some(true);
    }
    if lowered.starts_with("[ ]") {
        return Some(false);
    }
    let first = trimmed.chars().next();
    let last = trimmed.chars().last();
    if first.is_some_and(|c| CROSSES.contains(&c)) || last.is_some_and(|c| CROSSES.contains(&c)) {
        return Some(false);
    }
    if first.is_some_and(|c| TICKS.contains(&c)) || last.is_some_and(|c| TICKS.contains(&c)) {
        return Some(true);
    }
    None
}

/// Whether a token is a commit hash (7 to 40 hex digits, at least one digit and one letter).
pub fn commit_hash(token: &str) -> bool {
    let token = token.trim_matches(|c: char| c == '`' || c == '(' || c == ')' || c == ',');
    (7..=40).contains(&token.len())
        && token.chars().all(|c| c.is_ascii_hexdigit())
        && token.chars().any(|c| c.is_ascii_digit())
        && token.chars().any(|c| c.is_ascii_alphabetic())
}

/// Whether the text is a commit subject: a conventional-commit header ("refactor(segments):
/// migrate …", "docs: update …"), after an optional "Commit:" label or leading hash.
pub fn commit_subject(text: &str) -> bool {
    let mut rest = text.trim().trim_start_matches(['`', '*']).trim_start();
    if let Some(after) = rest
        .strip_prefix("Commit:")
        .or_else(|| rest.strip_prefix("commit:"))
    {
        rest = after.trim_start();
        if !rest.is_empty() {
            return true;
        }
    }
    if let Some((first, after)) = rest.split_once(char::is_whitespace)
        && commit_hash(first)
        && after.chars().any(char::is_alphabetic)
    {
        return true;
    }
    let Some((header, subject)) = rest.split_once(": ") else {
        return false;
    };
    let kind = header
        .split_once('(')
        .map_or(header, |(kind, scope)| {
            if scope.ends_with(')') || scope.ends_with(")!") {
                kind
            } else {
                ""
            }
        })
        .trim_end_matches('!');
    COMMIT_TYPES.contains(&kind) && subject.chars().any(char::is_alphabetic)
}

/// Whether a table row says its item is done: a tick, a commit hash, or a status cell.
pub fn done_row(row: &str) -> bool {
    if row.chars().any(|c| CROSSES.contains(&c)) {
        return false;
    }
    let cells: Vec<String> = row
        .split('|')
        .map(|cell| cell.trim().trim_matches(['*', '`']).trim().to_lowercase())
        .filter(|cell| !cell.is_empty())
        .collect();
    // The first cell is the item's key or name: only the others say what became of it.
    cells.iter().skip(1).any(|cell| {
        cell.chars().any(|c| TICKS.contains(&c))
            || commit_hash(cell)
            || DONE_CELLS.contains(&cell.as_str())
            || DONE_CELLS.iter().any(|done| {
                cell.strip_prefix(done)
                    .is_some_and(|rest| rest.starts_with([' ', '(']))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checklist_marks_read_as_done_or_not() {
        let table = [
            ("[x] Add the flag", Some(true)),
            ("[X] Add the flag", Some(true)),
            ("[ ] Add the flag", Some(false)),
            ("✓ lint clean", Some(true)),
            ("Lint and final verification ✅", Some(true)),
            ("❌ integration tests", Some(false)),
            ("Add the flag", None),
        ];
        for (text, expected) in table {
            assert_eq!(checklist(text), expected, "{text}");
        }
    }

    #[test]
    fn commit_subjects_are_recognised_and_prose_is_not() {
        let table = [
            ("refactor(segments): migrate 19 languages", true),
            ("docs: update GUI section with toolbar", true),
            ("feat!: drop the v1 API", true),
            ("Commit: gui: add toolbar, Preferences dialog", true),
            ("6184fe5 Add Response Format header", true),
            ("`871e5dd` Extract the shared helper", true),
            ("Note: the build is slow", false),
            ("Root cause: the tag was never pushed", false),
            ("deadbeef", false),
            ("Fixed the login test", false),
        ];
        for (text, expected) in table {
            assert_eq!(commit_subject(text), expected, "{text}");
        }
    }

    #[test]
    fn a_table_row_is_done_by_its_status_cells_not_its_key() {
        let table = [
            (
                "| 1 | Add `GetSummariseOptions()` to config.go | `871e5dd` |",
                true,
            ),
            ("| H-01 | High | Unescaped SQL | Fixed |", true),
            (
                "| 7 | Lint and final verification | ✓ (all passing) |",
                true,
            ),
            ("| M-02 | Medium | Race in cache | Open |", false),
            ("| Done | Task | Notes |", false),
            ("| 3 | Export | ❌ blocked |", false),
        ];
        for (row, expected) in table {
            assert_eq!(done_row(row), expected, "{row}");
        }
    }
}
