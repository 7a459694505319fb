//! Finding the parts of a settings file Baton edits, and refusing shapes it cannot edit.
//!
//! Baton edits the top-level object, its `hooks` object and the arrays under `hooks`. Anything
//! else in those places (a `hooks` array, an event object, a key written twice) is refused
//! with the key path named: guessing would mean rewriting someone else's configuration.

use std::path::Path;

use serde_json::Value;

use super::edit::Container;
use super::entries;
use super::error::InstallError;
use super::json_text::{self, Kind, Member, Node};
use crate::harness::Harness;

pub fn validate(text: &str, path: &Path) -> Result<(), InstallError> {
    serde_json::from_str::<Value>(text)
        .map(|_| ())
        .map_err(|error| InstallError::NotJson {
            path: path.to_path_buf(),
            detail: error.to_string(),
        })
}

pub fn root_object(text: &str, path: &Path) -> Result<(Node, Vec<Member>), InstallError> {
    let root = json_text::root(text).map_err(|error| scan_failed(path, error))?;
    if root.kind != Kind::Object {
        return Err(shape(path, "the top level is not a JSON object"));
    }
    let members = json_text::members(text, root).map_err(|error| scan_failed(path, error))?;
    Ok((root, members))
}

/// The `hooks` object, or `None` when the file has none.
pub fn hooks_object(text: &str, path: &Path) -> Result<Option<(Node, Vec<Member>)>, InstallError> {
    let (_, root_members) = root_object(text, path)?;
    let Some(index) = find(&root_members, "hooks", path, "")? else {
        return Ok(None);
    };
    let hooks = root_members[index].value;
    if hooks.kind != Kind::Object {
        return Err(shape(path, "`hooks` is not an object"));
    }
    let members = json_text::members(text, hooks).map_err(|error| scan_failed(path, error))?;
    Ok(Some((hooks, members)))
}

/// The object at `object_path` (the top level or `hooks`), or `None` when it is absent.
pub fn object_at(
    text: &str,
    object_path: &[&str],
    path: &Path,
) -> Result<Option<(Node, Vec<Member>)>, InstallError> {
    match object_path {
        [] => root_object(text, path).map(Some),
        ["hooks"] => hooks_object(text, path),
        _ => Ok(None),
    }
}

/// The object at `object_path`, which install has made sure exists.
pub fn existing_object(
    text: &str,
    object_path: &[&str],
    path: &Path,
) -> Result<(Node, Vec<Member>), InstallError> {
    object_at(text, object_path, path)?
        .ok_or_else(|| shape(path, "an object Baton added vanished while editing"))
}

/// The array under `hooks.<event>`, which install has made sure exists.
pub fn event_array(text: &str, event: &str, path: &Path) -> Result<Container, InstallError> {
    let (_, hooks_members) = existing_object(text, &["hooks"], path)?;
    let Some(index) = find(&hooks_members, event, path, "hooks.")? else {
        return Err(shape(
            path,
            &format!("`hooks.{event}` vanished while editing"),
        ));
    };
    let value = hooks_members[index].value;
    if value.kind != Kind::Array {
        return Err(shape(path, &format!("`hooks.{event}` is not an array")));
    }
    array_container(text, value, path)
}

pub fn array_container(text: &str, array: Node, path: &Path) -> Result<Container, InstallError> {
    let elements = json_text::elements(text, array).map_err(|error| scan_failed(path, error))?;
    Ok(Container {
        node: array,
        items: elements.iter().map(|element| element.span).collect(),
    })
}

/// The index of member `key`. A key written twice is refused: which copy the harness reads
/// is not something to guess before editing.
pub fn find(
    members: &[Member],
    key: &str,
    path: &Path,
    prefix: &str,
) -> Result<Option<usize>, InstallError> {
    let mut matches = members
        .iter()
        .enumerate()
        .filter(|(_, member)| member.key == key);
    let first = matches.next().map(|(index, _)| index);
    if matches.next().is_some() {
        return Err(shape(
            path,
            &format!("`{prefix}{key}` appears more than once"),
        ));
    }
    Ok(first)
}

pub fn baton_indices(text: &str, harness: Harness, array: &Container) -> Vec<usize> {
    array
        .items
        .iter()
        .enumerate()
        .filter(|(_, span)| {
            element_value(text, **span)
                .is_some_and(|value| entries::is_baton_element(harness, &value))
        })
        .map(|(index, _)| index)
        .collect()
}

pub fn element_value(text: &str, span: json_text::Span) -> Option<Value> {
    serde_json::from_str(&text[span.start..span.end]).ok()
}

pub fn container_of(object: Node, members: &[Member]) -> Container {
    Container {
        node: object,
        items: members.iter().map(|member| member.span).collect(),
    }
}

/// The text between a container's brackets.
pub fn inside(text: &str, node: Node) -> &str {
    let inner = node.inner();
    &text[inner.start..inner.end]
}

pub fn shape(path: &Path, detail: &str) -> InstallError {
    InstallError::UnexpectedShape {
        path: path.to_path_buf(),
        detail: detail.to_string(),
    }
}

pub fn scan_failed(path: &Path, error: json_text::ScanError) -> InstallError {
    InstallError::NotJson {
        path: path.to_path_buf(),
        detail: error.to_string(),
    }
}
