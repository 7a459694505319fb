//! Install and uninstall as pure functions on a settings file's text.
//!
//! Install brings each of Baton's events to exactly one Baton element equal to the desired one
//! (appending, replacing in place, or dropping duplicates) and creates `hooks` and event arrays
//! when missing, recording what it created in the manifest. Uninstall removes every Baton
//! element from every event, then the members install created, newest first, while they are
//! empty. Text is re-scanned after each edit: settings files are small and it keeps every edit
//! a plain splice.

use std::path::Path;

use serde_json::{Value, json};

use super::edit::{self, Container, NewItem};
use super::entries::{self, Entry};
use super::error::InstallError;
use super::json_text::{self, Kind};
use super::layout::Layout;
use super::manifest::Manifest;
use super::shape::{
    array_container, baton_indices, container_of, element_value, event_array, existing_object,
    find, hooks_object, inside, object_at, root_object, validate,
};
use crate::harness::Harness;

/// The text a new settings file starts from before Baton's members are added.
pub const NEW_FILE: &str = "{}\n";

/// `original` with Baton's `entries` in place; records created members in `manifest`.
pub fn install(
    original: &str,
    harness: Harness,
    entries: &[Entry],
    manifest: &mut Manifest,
    path: &Path,
) -> Result<String, InstallError> {
    validate(original, path)?;
    let (root, root_members) = root_object(original, path)?;
    let layout = Layout::detect(original, root, &root_members);
    let mut text = original.to_string();
    if hooks_object(&text, path)?.is_none() {
        // Baton is the first to hold hooks here, so it completes the format: Cursor's
        // `version` goes in before `hooks`. A file that has hooks already is left as it is.
        if let Some(version) = entries::format_version(harness)
            && find(&root_object(&text, path)?.1, "version", path, "")?.is_none()
        {
            text = add_member(&text, &layout, &[], "version", &version, manifest, path)?;
        }
        text = add_member(&text, &layout, &[], "hooks", &json!({}), manifest, path)?;
    }
    for entry in entries {
        text = install_entry(&text, harness, entry, &layout, manifest, path)?;
    }
    Ok(text)
}

/// `original` without any of Baton's elements, and without the members `manifest` says
/// install created once they are empty.
pub fn uninstall(
    original: &str,
    harness: Harness,
    manifest: Option<&Manifest>,
    path: &Path,
) -> Result<String, InstallError> {
    validate(original, path)?;
    root_object(original, path)?;
    let mut text = original.to_string();
    while let Some((event, container, index)) = last_baton_element(&text, harness, path)? {
        let empty_inside = manifest.map_or("", |known| known.empty_inside(&["hooks", &event]));
        text = edit::remove(&text, &container, index, empty_inside);
    }
    let Some(manifest) = manifest else {
        return Ok(text);
    };
    for created in manifest.created_members.iter().rev() {
        let key_path: Vec<&str> = created.iter().map(String::as_str).collect();
        text = prune(&text, &key_path, manifest, path)?;
    }
    Ok(text)
}

/// True when the text's top-level object holds nothing: a file Baton created can go.
pub fn is_empty_object(text: &str) -> bool {
    json_text::root(text)
        .is_ok_and(|root| root.kind == Kind::Object && json_text::is_empty_container(text, root))
}

fn install_entry(
    text: &str,
    harness: Harness,
    entry: &Entry,
    layout: &Layout,
    manifest: &mut Manifest,
    path: &Path,
) -> Result<String, InstallError> {
    let event = entry.event;
    let mut text = text.to_string();
    let (_, hooks_members) = existing_object(&text, &["hooks"], path)?;
    if find(&hooks_members, event, path, "hooks.")?.is_none() {
        text = add_member(&text, layout, &["hooks"], event, &json!([]), manifest, path)?;
    }
    let array = event_array(&text, event, path)?;
    let ours = baton_indices(&text, harness, &array);
    let Some((&first, extras)) = ours.split_first() else {
        if array.items.is_empty() {
            manifest.record_empty_inside(&["hooks", event], inside(&text, array.node));
        }
        return Ok(edit::append(
            &text,
            layout,
            &array,
            NewItem::Element(&entry.element),
        ));
    };
    // Drop duplicates last first, so earlier spans stay valid, then fix the one that remains.
    for &index in extras.iter().rev() {
        let current = event_array(&text, event, path)?;
        text = edit::remove(&text, &current, index, "");
    }
    let current = event_array(&text, event, path)?;
    let existing = element_value(&text, current.items[first]);
    if existing.as_ref() != Some(&entry.element) {
        text = edit::replace(&text, layout, &current, first, &entry.element);
    }
    Ok(text)
}

/// Removes the member at `key_path` if install created it and it is empty again. Cursor's
/// `version` is a scalar: it goes once no `hooks` remains beside it.
fn prune(
    text: &str,
    key_path: &[&str],
    manifest: &Manifest,
    path: &Path,
) -> Result<String, InstallError> {
    let Some((&key, parent_path)) = key_path.split_last() else {
        return Ok(text.to_string());
    };
    let Some((parent_node, parent_members)) = object_at(text, parent_path, path)? else {
        return Ok(text.to_string());
    };
    let Some(index) = find(&parent_members, key, path, "")? else {
        return Ok(text.to_string());
    };
    let value = parent_members[index].value;
    let removable = match value.kind {
        Kind::Object | Kind::Array => json_text::is_empty_container(text, value),
        _ => find(&parent_members, "hooks", path, "")?.is_none(),
    };
    if !removable {
        return Ok(text.to_string());
    }
    let container = container_of(parent_node, &parent_members);
    let empty_inside = manifest.empty_inside(parent_path);
    Ok(edit::remove(text, &container, index, empty_inside))
}

/// The last Baton element in any event array, as (event, array, index).
fn last_baton_element(
    text: &str,
    harness: Harness,
    path: &Path,
) -> Result<Option<(String, Container, usize)>, InstallError> {
    let Some((_, hooks_members)) = hooks_object(text, path)? else {
        return Ok(None);
    };
    // Arrays are the only shape Baton writes; anything else under another event is not ours.
    for member in hooks_members
        .iter()
        .filter(|member| member.value.kind == Kind::Array)
    {
        let array = array_container(text, member.value, path)?;
        if let Some(&index) = baton_indices(text, harness, &array).last() {
            return Ok(Some((member.key.clone(), array, index)));
        }
    }
    Ok(None)
}

/// Appends member `key` to the object at `object_path`, recording in the manifest that install
/// created it and, when the object was empty, what its inside was.
fn add_member(
    text: &str,
    layout: &Layout,
    object_path: &[&str],
    key: &str,
    value: &Value,
    manifest: &mut Manifest,
    path: &Path,
) -> Result<String, InstallError> {
    let (object, members) = existing_object(text, object_path, path)?;
    if members.is_empty() {
        manifest.record_empty_inside(object_path, inside(text, object));
    }
    let mut key_path = object_path.to_vec();
    key_path.push(key);
    manifest.record_created(&key_path);
    let container = container_of(object, &members);
    Ok(edit::append(
        text,
        layout,
        &container,
        NewItem::Member(key, value),
    ))
}
