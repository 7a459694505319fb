//! Text edits on one container: append an item, remove an item, replace an item.
//!
//! Each removal is the exact inverse of the matching append, which is what makes uninstall
//! give back the original bytes:
//! - appending after a last item inserts `separator + item` at the last item's end, and
//!   removing a non-first item deletes from the previous item's end to its own end;
//! - appending to an empty container replaces its inside, and removing the only item puts back
//!   the inside the caller recorded before the append (nothing, when Baton created it).
//!
//! The separator is copied from the container's own items, so the new item sits like its
//! siblings (same line breaks, same indentation).

use serde_json::Value;

use super::json_text::{Node, Span};
use super::layout::{Layout, line_indent};

/// An object or array and the spans of its items (members or elements), in text order.
#[derive(Debug, Clone)]
pub struct Container {
    pub node: Node,
    pub items: Vec<Span>,
}

/// What to append: an array element or an object member.
#[derive(Debug, Clone, Copy)]
pub enum NewItem<'a> {
    Element(&'a Value),
    Member(&'a str, &'a Value),
}

/// Appends `item` as the container's last item.
pub fn append(text: &str, layout: &Layout, container: &Container, item: NewItem<'_>) -> String {
    let inner = container.node.inner();
    let Some(last) = container.items.last() else {
        if layout.compact {
            return splice(text, inner, &render(layout, item, false, ""));
        }
        let base = line_indent(text, container.node.span.start);
        let child = format!("{base}{}", layout.unit);
        let newline = layout.newline;
        let rendered = render(layout, item, true, &child);
        return splice(
            text,
            inner,
            &format!("{newline}{child}{rendered}{newline}{base}"),
        );
    };
    let separator = match container.items.as_slice() {
        [.., before_last, last] => text[before_last.end..last.start].to_string(),
        // One item shows no separator to copy: reuse the space after the opening bracket, or
        // in a one-line file without it, the file's spacing after a colon.
        _ => {
            let leading = &text[inner.start..last.start];
            let spaced = leading.is_empty() && layout.colon.ends_with(' ');
            format!(",{}", if spaced { " " } else { leading })
        }
    };
    let pretty = separator.contains('\n');
    let indent = if pretty {
        line_indent(text, last.start)
    } else {
        ""
    };
    let insertion = format!("{separator}{}", render(layout, item, pretty, indent));
    let at = Span {
        start: last.end,
        end: last.end,
    };
    splice(text, at, &insertion)
}

/// Removes item `index`. When it is the only item, the container's inside becomes
/// `empty_inside` (the text recorded before Baton first filled it).
pub fn remove(text: &str, container: &Container, index: usize, empty_inside: &str) -> String {
    let items = &container.items;
    if items.len() == 1 {
        return splice(text, container.node.inner(), empty_inside);
    }
    let span = if index > 0 {
        Span {
            start: items[index - 1].end,
            end: items[index].end,
        }
    } else {
        Span {
            start: items[0].start,
            end: items[1].start,
        }
    };
    splice(text, span, "")
}

/// Replaces element `index` with `value`, laid out like the container's items.
pub fn replace(
    text: &str,
    layout: &Layout,
    container: &Container,
    index: usize,
    value: &Value,
) -> String {
    let span = container.items[index];
    let pretty = text[container.node.inner().start..container.items[0].start].contains('\n');
    let indent = if pretty {
        line_indent(text, span.start)
    } else {
        ""
    };
    splice(text, span, &layout.render(value, pretty, indent))
}

fn render(layout: &Layout, item: NewItem<'_>, pretty: bool, indent: &str) -> String {
    match item {
        NewItem::Element(value) => layout.render(value, pretty, indent),
        NewItem::Member(key, value) => layout.render_member(key, value, pretty, indent),
    }
}

fn splice(text: &str, span: Span, replacement: &str) -> String {
    let mut out = String::with_capacity(text.len() + replacement.len());
    out.push_str(&text[..span.start]);
    out.push_str(replacement);
    out.push_str(&text[span.end..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::json_text;
    use serde_json::json;

    fn array_of(text: &str) -> Container {
        let node = json_text::root(text).unwrap();
        let items = json_text::elements(text, node).unwrap();
        Container {
            node,
            items: items.iter().map(|element| element.span).collect(),
        }
    }

    fn layout(text: &str) -> Layout {
        Layout {
            newline: if text.contains("\r\n") { "\r\n" } else { "\n" },
            unit: if text.contains('\t') { "\t" } else { "  " }.to_string(),
            colon: ": ".to_string(),
            compact: false,
        }
    }

    #[test]
    fn append_then_remove_gives_back_the_original() {
        let value = json!({"k": 1});
        let table = [
            ("[]", "[\n  {\n    \"k\": 1\n  }\n]"),
            ("[\n  1\n]", "[\n  1,\n  {\n    \"k\": 1\n  }\n]"),
            ("[1, 2]", "[1, 2, {\"k\": 1}]"),
            ("[1,2]", "[1,2,{\"k\": 1}]"),
            ("[1]", "[1, {\"k\": 1}]"),
            (
                "[\r\n\t1,\r\n\t2\r\n]",
                "[\r\n\t1,\r\n\t2,\r\n\t{\r\n\t\t\"k\": 1\r\n\t}\r\n]",
            ),
        ];
        for (original, expected) in table {
            let container = array_of(original);
            let appended = append(
                original,
                &layout(original),
                &container,
                NewItem::Element(&value),
            );
            assert_eq!(appended, expected, "{original:?}");
            let grown = array_of(&appended);
            let last = grown.items.len() - 1;
            let inside = &original[container.node.inner().start..container.node.inner().end];
            assert_eq!(remove(&appended, &grown, last, inside), original);
        }
    }

    #[test]
    fn removing_the_first_item_keeps_the_rest_laid_out() {
        let text = "[\n  1,\n  2\n]";
        assert_eq!(remove(text, &array_of(text), 0, ""), "[\n  2\n]");
        assert_eq!(remove(text, &array_of(text), 1, ""), "[\n  1\n]");
        assert_eq!(remove("[ 1 ]", &array_of("[ 1 ]"), 0, ""), "[]");
    }

    #[test]
    fn replace_keeps_the_item_position_and_indent() {
        let text = "[\n    1,\n    2\n]";
        let replaced = replace(text, &layout(text), &array_of(text), 0, &json!([3]));
        assert_eq!(replaced, "[\n    [\n      3\n    ],\n    2\n]");
    }
}
