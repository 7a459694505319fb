//! Text to statements: the structure the judge decides on.
//!
//! The text is read as Markdown (`pulldown-cmark`): headings, paragraphs and list items are
//! blocks; fenced and indented code blocks are skipped (code is not a claim). Each block is cut
//! into sentences (`unicode-segmentation`, Unicode sentence boundaries) and each sentence into
//! clauses at a contrast or a new clause ("; ", " — ", " but ", " however", " although ",
//! " though "), so "X is done, but Y is not" credits X only. Every statement is a verbatim slice of its source text (the
//! quote shown as evidence).
//!
//! Context a statement inherits from the structure around it:
//! - **plan**: it sits under a heading, or a list introduced by a label ending in ':', whose
//!   words are a plan cue ("Next steps", "TODO", "Follow-ups", "Remaining", "Open questions");
//!   or its own block starts with such a label ("Next steps: wire the flag"). A plan is not a
//!   claim of completion.
//! - **done**: the same, under a completion heading or label ("Done", "Completed", "Shipped",
//!   "Summary of changes"); the heading stands in for the completion verb of a terse item.
//! - **question**: its sentence ends with '?'.
//! - **marks** ([`marks`]): a checked box or tick makes its item done (an open box or a cross,
//!   a plan); a table row (tables are read, one statement a row, the header row skipped) is
//!   done when a cell other than its key carries a tick, a commit hash or a status word; a
//!   commit subject ("docs: update …", "Commit: …", "6184fe5 Add …") is done work.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use unicode_segmentation::UnicodeSegmentation;

use super::cues;
use super::language;
use super::marks;
use super::terms;

/// One statement: a clause of a sentence of a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// A verbatim slice of the source text.
    pub quote: String,
    pub plan: bool,
    pub done_label: bool,
    pub question: bool,
    /// Position of its sentence in the source (clauses of one sentence share it).
    pub sentence: usize,
    /// Whether it is (part of) a list item: items stand alone, nothing carries across them.
    pub item: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaf {
    Heading(HeadingLevel),
    Paragraph,
    Item,
    /// A table row (the header row is not a statement).
    Row,
    /// A paragraph that is only a bold label.
    Label,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Context {
    plan: bool,
    done: bool,
}

fn label_context(text: &str) -> Context {
    let words = terms::words(text);
    let english = Context {
        plan: cues::is_plan_label(&words),
        done: cues::is_done_label(&words),
    };
    if english.plan || english.done {
        return english;
    }
    // Labels are too short to detect their language: every language's label words are tried.
    let foreign = language::ALL.iter().map(|lang| language::cues(text, *lang));
    let plan = foreign.clone().any(|cues| cues.plan_label);
    Context {
        plan,
        done: !plan && foreign.into_iter().any(|cues| cues.done_label),
    }
}

/// A leading "Label:" of at most four words, and its context.
fn leading_label(text: &str) -> Option<Context> {
    let (label, rest) = text.split_once(':')?;
    let count = label.split_whitespace().count();
    if count == 0 || count > 4 || rest.starts_with("//") {
        return None;
    }
    let context = label_context(label);
    (context.plan || context.done).then_some(context)
}

/// Strips list markers and heading hashes a block's source begins with.
fn strip_marker(text: &str) -> &str {
    let trimmed = text.trim_start();
    let trimmed = trimmed.trim_start_matches('#').trim_start();
    for marker in ["- [x] ", "- [ ] ", "* [x] ", "* [ ] ", "- ", "* ", "+ "] {
        if let Some(rest) = trimmed.strip_prefix(marker) {
            return rest;
        }
    }
    let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
    if digits > 0
        && let Some(rest) = trimmed[digits..]
            .strip_prefix(". ")
            .or_else(|| trimmed[digits..].strip_prefix(") "))
    {
        return rest;
    }
    trimmed
}

/// Whether the block at `start..end` of `text` is only a short bold label ("**Follow-ups**",
/// "**Blocked**:"): the Markdown source around its text is the emphasis and nothing else.
fn bold_label(text: &str, start: usize, end: usize) -> bool {
    let body = &text[start..end];
    let line_start = text[..start].rfind('\n').map_or(0, |at| at + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |at| end + at);
    let before = text[line_start..start].trim_start();
    let after = text[end..line_end].trim_end();
    before == "**"
        && (after == "**" || after == "**:" || after == ":**")
        && !body.contains("**")
        && body.split_whitespace().count() <= 6
}

/// Blocks of a text: (leaf kind, verbatim source slice).
fn blocks(text: &str) -> Vec<(Leaf, &str)> {
    let mut labelled = Vec::new();
    for (leaf, start, end) in spans(text) {
        let leaf = if leaf == Leaf::Paragraph && bold_label(text, start, end) {
            Leaf::Label
        } else {
            leaf
        };
        labelled.push((leaf, &text[start..end]));
    }
    labelled
}

/// Blocks of a text as (leaf kind, start, end) of their verbatim source.
fn spans(text: &str) -> Vec<(Leaf, usize, usize)> {
    let mut out = Vec::new();
    let mut stack: Vec<Leaf> = Vec::new();
    let mut span: Option<(usize, usize)> = None;
    let mut in_code = false;
    let mut in_head = false;
    let flush = |span: &mut Option<(usize, usize)>, leaf: Option<Leaf>, out: &mut Vec<_>| {
        if let (Some((start, end)), Some(leaf)) = (span.take(), leaf) {
            out.push((leaf, start, end));
        }
    };
    for (event, range) in Parser::new_ext(text, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            // A row is one statement: its cells are not blocks of their own.
            Event::Start(Tag::TableCell) | Event::End(TagEnd::TableCell) => {}
            Event::Start(Tag::TableHead) => in_head = true,
            Event::End(TagEnd::TableHead) => {
                in_head = false;
                span = None;
            }
            Event::Start(
                Tag::Emphasis
                | Tag::Strong
                | Tag::Strikethrough
                | Tag::Link { .. }
                | Tag::Image { .. }
                | Tag::Superscript
                | Tag::Subscript,
            )
            | Event::End(
                TagEnd::Emphasis
                | TagEnd::Strong
                | TagEnd::Strikethrough
                | TagEnd::Link
                | TagEnd::Image
                | TagEnd::Superscript
                | TagEnd::Subscript,
            ) => {}
            Event::SoftBreak | Event::HardBreak => {
                flush(&mut span, stack.last().copied(), &mut out);
            }
            Event::Start(tag) => {
                flush(&mut span, stack.last().copied(), &mut out);
                match tag {
                    Tag::Heading { level, .. } => stack.push(Leaf::Heading(level)),
                    Tag::Paragraph => stack.push(Leaf::Paragraph),
                    Tag::Item => stack.push(Leaf::Item),
                    Tag::TableRow => stack.push(Leaf::Row),
                    Tag::CodeBlock(_) => in_code = true,
                    _ => {}
                }
            }
            Event::End(tag) => {
                flush(&mut span, stack.last().copied(), &mut out);
                match tag {
                    TagEnd::Heading(_) | TagEnd::Paragraph | TagEnd::Item | TagEnd::TableRow => {
                        stack.pop();
                    }
                    TagEnd::CodeBlock => in_code = false,
                    _ => {}
                }
            }
            Event::Text(_) | Event::Code(_) | Event::InlineHtml(_) if !in_code && !in_head => {
                span = Some(match span {
                    Some((start, end)) => (start.min(range.start), end.max(range.end)),
                    None => (range.start, range.end),
                });
            }
            _ => {}
        }
    }
    flush(&mut span, stack.last().copied(), &mut out);
    out
}

/// Clauses of a sentence, as (start, end) byte ranges of it.
fn clauses(sentence: &str) -> Vec<&str> {
    let lowered = sentence.to_ascii_lowercase();
    let mut cuts = vec![0];
    for separator in ["; ", " — ", " but ", " however", " although ", " though "] {
        let mut from = 0;
        while let Some(found) = lowered[from..].find(separator) {
            let at = from + found;
            cuts.push(at);
            from = at + separator.len();
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts.push(sentence.len());
    cuts.windows(2)
        .map(|pair| {
            sentence[pair[0]..pair[1]]
                .trim()
                .trim_start_matches([';', '—'])
                .trim()
                .trim_start_matches(',')
                .trim()
        })
        .filter(|clause| clause.chars().any(char::is_alphanumeric))
        .collect()
}

/// The statements of a text, in order.
pub fn statements(text: &str) -> Vec<Statement> {
    let mut out = Vec::new();
    let mut section: Vec<(HeadingLevel, Context)> = Vec::new();
    let mut list_label: Option<Context> = None;
    let mut sentence_index = 0;
    for (leaf, source) in blocks(text) {
        let body = strip_marker(source);
        let mut context = section
            .last()
            .map(|(_, context)| *context)
            .unwrap_or_default();
        match leaf {
            Leaf::Heading(level) => {
                while section.last().is_some_and(|(open, _)| *open >= level) {
                    section.pop();
                }
                section.push((level, label_context(body)));
                list_label = None;
                continue;
            }
            // A paragraph that is only a bold label ("**Blocked**", "**Next Steps**") heads a
            // section as a heading does, below any real heading.
            Leaf::Label => {
                while section
                    .last()
                    .is_some_and(|(open, _)| *open >= HeadingLevel::H6)
                {
                    section.pop();
                }
                section.push((HeadingLevel::H6, label_context(body)));
                list_label = None;
                continue;
            }
            Leaf::Paragraph => {
                list_label = body
                    .trim_end()
                    .ends_with(':')
                    .then(|| label_context(body.trim_end().trim_end_matches(':')));
                if list_label.is_some()
                    && body
                        .trim_end()
                        .trim_end_matches(':')
                        .split_whitespace()
                        .count()
                        <= 6
                {
                    continue;
                }
            }
            Leaf::Item => {
                if let Some(label) = list_label {
                    context.plan |= label.plan;
                    context.done |= label.done;
                }
            }
            Leaf::Row => context.done |= marks::done_row(source),
        }
        match marks::checklist(body) {
            Some(true) => context.done = true,
            Some(false) => context.plan = true,
            None => context.done |= marks::commit_subject(body),
        }
        if let Some(label) = leading_label(body) {
            context.plan |= label.plan;
            context.done |= label.done;
        }
        for sentence in body.unicode_sentences() {
            let question = sentence.trim_end().ends_with('?');
            for clause in clauses(sentence) {
                out.push(Statement {
                    quote: clause.to_string(),
                    plan: context.plan,
                    done_label: context.done && !context.plan,
                    question,
                    sentence: sentence_index,
                    item: matches!(leaf, Leaf::Item | Leaf::Row),
                });
            }
            sentence_index += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quotes(text: &str) -> Vec<(String, bool, bool)> {
        statements(text)
            .into_iter()
            .map(|s| (s.quote, s.plan, s.done_label))
            .collect()
    }

    #[test]
    fn items_under_a_next_steps_heading_are_plans() {
        let found = quotes(
            "Fixed the upload size check.\n\n## Next steps\n- Add rate limiting\n- Write the changelog",
        );
        assert_eq!(
            found,
            [
                ("Fixed the upload size check.".to_string(), false, false),
                ("Add rate limiting".to_string(), true, false),
                ("Write the changelog".to_string(), true, false),
            ]
        );
    }

    #[test]
    fn a_label_ending_in_a_colon_marks_the_list_it_introduces() {
        let found = quotes(
            "Done today: fixed the avatar upload.\n\nFollow-ups:\n* ship dark mode\n\nTODO:\n1. Write the job",
        );
        assert_eq!(
            found[0],
            (
                "Done today: fixed the avatar upload.".to_string(),
                false,
                true
            )
        );
        assert_eq!(found[1], ("ship dark mode".to_string(), true, false));
        assert_eq!(found[2], ("Write the job".to_string(), true, false));
    }

    #[test]
    fn a_contrast_splits_a_sentence_into_clauses() {
        let found = quotes("The entry is done, but the notes are not written yet. Is it ok?");
        assert_eq!(found[0].0, "The entry is done,");
        assert_eq!(found[1].0, "but the notes are not written yet.");
        assert!(statements("Is it ok?")[0].question);
    }

    #[test]
    fn code_blocks_are_not_statements_and_quotes_are_verbatim() {
        let text = "Renamed `ctx_mgr` to **session_ctx**.\n\n```\nfixed = true\n```";
        let found = statements(text);
        assert_eq!(found.len(), 1);
        assert!(text.contains(&found[0].quote));
    }
}
