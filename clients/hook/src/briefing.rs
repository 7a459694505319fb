//! Rendering the startup briefing and cutting it to the budget.
//!
//! The briefing is rendered line by line while recording where each commitment's line ends.
//! The cut keeps whole lines up to the budget, and the commitments stamped on `open`
//! (`briefedMemories`) are exactly those whose line survived: the stamp must never claim the
//! agent saw a commitment the cut removed.

use serde_json::{Value, json};

/// A commitment the agent was shown: `{id: memoryId, topic, status}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Briefed {
    pub memory_id: String,
    pub topic: String,
    pub status: String,
}

impl Briefed {
    pub fn to_json(&self) -> Value {
        json!({"id": self.memory_id, "topic": self.topic, "status": self.status})
    }
}

/// The rendered briefing after the cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    /// Unique by memory id, in order of appearance, at most 100.
    pub briefed: Vec<Briefed>,
    pub cut: bool,
}

/// Most rows one open may stamp (MAX_BRIEFED_MEMORIES).
const MAX_BRIEFED: usize = 100;
const CUT_NOTE: &str = "… (briefing cut to fit)\n";

const COMMITMENT_SECTIONS: [(&str, &str); 2] =
    [("commitments", "Open commitments"), ("overdue", "Overdue")];
const MEMORY_SECTIONS: [(&str, &str); 4] = [
    ("blockers", "Blockers"),
    ("staleCandidates", "Possibly stale"),
    ("recentDecisions", "Recent decisions"),
    ("preferences", "Preferences"),
];

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One rendered line, and the commitment it shows.
struct Line {
    text: String,
    commitment: Option<Briefed>,
}

fn lines(briefing: &Value) -> Vec<Line> {
    let mut out = vec![Line {
        text: "Baton briefing — the live state this session starts from.\n".into(),
        commitment: None,
    }];
    let heading = |title: &str, section: &Value| Line {
        text: format!(
            "\n## {title} ({})\n",
            section.get("count").and_then(Value::as_u64).unwrap_or(0)
        ),
        commitment: None,
    };
    for (key, title) in COMMITMENT_SECTIONS {
        let Some(section) = briefing.get(key).filter(|s| !items(s).is_empty()) else {
            continue;
        };
        out.push(heading(title, section));
        for item in items(section) {
            let topic = one_line(text(item, "topic"));
            let status = text(item, "status");
            let due = item
                .get("dueAt")
                .and_then(Value::as_str)
                .map(|due| format!(", due {due}"))
                .unwrap_or_default();
            let overdue = if item.get("overdue") == Some(&Value::Bool(true)) {
                ", overdue"
            } else {
                ""
            };
            let memory_id = text(item, "memoryId");
            out.push(Line {
                text: format!("- {topic} [{status}{due}{overdue}]\n"),
                commitment: (!memory_id.is_empty() && !topic.is_empty()).then(|| Briefed {
                    memory_id: memory_id.to_string(),
                    topic,
                    status: status.to_string(),
                }),
            });
        }
    }
    for (key, title) in MEMORY_SECTIONS {
        let Some(section) = briefing.get(key).filter(|s| !items(s).is_empty()) else {
            continue;
        };
        out.push(heading(title, section));
        for item in items(section) {
            let project = item
                .get("project")
                .and_then(Value::as_str)
                .map(|project| format!(" ({})", one_line(project)))
                .unwrap_or_default();
            out.push(Line {
                text: format!("- {}{project}\n", one_line(text(item, "topic"))),
                commitment: None,
            });
        }
    }
    out
}

fn items(section: &Value) -> &[Value] {
    section
        .get("items")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Renders `briefing` (the `GET /api/v1/briefing` answer) within `max_chars` characters.
pub fn render(briefing: &Value, max_chars: usize) -> Rendered {
    let all = lines(briefing);
    let total: usize = all.iter().map(|line| line.text.chars().count()).sum();
    let budget = if total <= max_chars {
        max_chars
    } else {
        max_chars.saturating_sub(CUT_NOTE.chars().count())
    };
    let mut rendered = Rendered {
        text: String::new(),
        briefed: Vec::new(),
        cut: false,
    };
    let mut used = 0;
    for line in all {
        let length = line.text.chars().count();
        if used + length > budget {
            rendered.cut = true;
            break;
        }
        used += length;
        rendered.text.push_str(&line.text);
        if let Some(commitment) = line.commitment {
            let seen = rendered
                .briefed
                .iter()
                .any(|row| row.memory_id == commitment.memory_id);
            if !seen && rendered.briefed.len() < MAX_BRIEFED {
                rendered.briefed.push(commitment);
            }
        }
    }
    if rendered.cut && used + CUT_NOTE.chars().count() <= max_chars {
        rendered.text.push_str(CUT_NOTE);
    }
    rendered
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commitment(n: usize) -> Value {
        json!({"id": format!("c{n}"), "memoryId": format!("00000000-0000-7000-8000-{n:012}"),
            "topic": format!("ship part {n}"), "status": "open", "dueAt": null, "overdue": false})
    }

    fn briefing(count: usize) -> Value {
        json!({
            "selector": {"kind": "all"}, "mode": "full", "generatedAt": "2026-11-30T00:00:00.000Z",
            "commitments": {"count": count, "items": (0..count).map(commitment).collect::<Vec<_>>(), "hasMore": false},
            "overdue": {"count": 1, "items": [commitment(0)], "hasMore": false},
            "recentDecisions": {"count": 1, "items": [{"id": "m", "memoryType": "decision",
                "topic": "use  postgres", "scope": "work", "project": "baton",
                "recordedAt": "x", "updatedAt": "x"}]},
        })
    }

    #[test]
    fn a_briefing_within_budget_is_whole() {
        let rendered = render(&briefing(3), 8000);
        assert!(!rendered.cut);
        assert_eq!(
            rendered.briefed.len(),
            3,
            "the overdue repeat is stamped once"
        );
        assert!(rendered.text.contains("- ship part 2 [open]"));
        assert!(rendered.text.contains("- use postgres (baton)"));
    }

    #[test]
    fn the_cut_keeps_whole_lines_and_stamps_only_survivors() {
        for budget in [40, 120, 200, 333, 500] {
            let rendered = render(&briefing(25), budget);
            assert!(rendered.text.chars().count() <= budget, "{budget}");
            assert!(rendered.cut, "{budget}");
            for row in &rendered.briefed {
                assert!(
                    rendered.text.contains(&format!("- {} [", row.topic)),
                    "{budget}: stamped {} that the agent never saw",
                    row.topic
                );
            }
            let shown: std::collections::BTreeSet<_> = rendered
                .text
                .lines()
                .filter(|line| line.starts_with("- ship part"))
                .collect();
            assert_eq!(
                shown.len(),
                rendered.briefed.len(),
                "{budget}: every shown commitment is stamped"
            );
        }
    }

    #[test]
    fn an_empty_or_odd_briefing_renders_without_stamps() {
        let rendered = render(&json!({"commitments": {"count": 0, "items": []}}), 8000);
        assert!(rendered.briefed.is_empty());
        let odd = render(
            &json!({"commitments": {"items": [{"topic": "no id"}]}}),
            8000,
        );
        assert!(
            odd.briefed.is_empty(),
            "a row without a memory id cannot be stamped"
        );
    }
}
