//! Writes the derived document (utoipa writes OpenAPI 3.1) as the OpenAPI 3.0.3 document the
//! API has always served, which the pinned Schemathesis and 3.0 clients read:
//!
//! - a nullable type, `"type": [T, "null"]`, becomes `"type": T, "nullable": true`, and a
//!   nullable inline object, `"oneOf": [{"type": "null"}, S]`, becomes `S` with `nullable`;
//! - an optional body (`Option<Body>` in `request_body`) is `required: false` with the body's
//!   schema, never a `null` body;
//! - an integer's range is stated as bounds a 3.0 validator reads, unless its field says
//!   narrower: an `i64` keeps its `int64` format and gains its maximum, a `u32` or `u64`
//!   (utoipa's `u-int32`, `u-int64`, formats 3.0 does not define) becomes its bounds;
//! - the license names itself the 3.0 way (`identifier` is 3.1);
//! - every object with properties is closed (`additionalProperties: false`): a body is parsed
//!   with `deny_unknown_fields` (the derive says so already), an answer is a serde struct,
//!   which writes exactly its fields.

use serde_json::{Map, Value, json};

/// Rewrites `document` in place.
pub fn render(document: &mut Value) {
    document["openapi"] = json!("3.0.3");
    if let Some(license) = document["info"]["license"].as_object_mut() {
        license.remove("identifier");
    }
    if let Some(paths) = document["paths"].as_object_mut() {
        let operations = paths
            .values_mut()
            .filter_map(Value::as_object_mut)
            .flat_map(|item| item.values_mut());
        operations.for_each(optional_body);
    }
    rewrite(document);
}

/// utoipa writes `Option<Body>` as a body that may be `null` and leaves `required` out.
fn optional_body(operation: &mut Value) {
    let Some(body) = operation.get_mut("requestBody") else {
        return;
    };
    if body.get("required").is_some() {
        return;
    }
    body["required"] = json!(false);
    let contents = body["content"]
        .as_object_mut()
        .into_iter()
        .flat_map(|content| content.values_mut());
    for media in contents {
        let variants = media["schema"]["oneOf"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if let [first, second] = variants.as_slice() {
            let null = json!({"type": "null"});
            let schema = if *first == null { second } else { first };
            media["schema"] = schema.clone();
        }
    }
}

/// Every node, children first.
fn rewrite(node: &mut Value) {
    match node {
        Value::Array(items) => items.iter_mut().for_each(rewrite),
        Value::Object(map) => {
            map.values_mut().for_each(rewrite);
            nullable_type(map);
            nullable_one_of(map);
            integer_range(map);
            closed(map);
        }
        _ => {}
    }
}

fn nullable_type(schema: &mut Map<String, Value>) {
    let Some(Value::Array(kinds)) = schema.get("type") else {
        return;
    };
    let others: Vec<Value> = kinds
        .iter()
        .filter(|kind| *kind != "null")
        .cloned()
        .collect();
    if others.len() + 1 != kinds.len() || others.len() != 1 {
        return;
    }
    schema.insert("type".into(), others[0].clone());
    schema.insert("nullable".into(), json!(true));
}

fn nullable_one_of(schema: &mut Map<String, Value>) {
    let Some(Value::Array(variants)) = schema.get("oneOf") else {
        return;
    };
    let null = json!({"type": "null"});
    let others: Vec<Value> = variants
        .iter()
        .filter(|variant| **variant != null)
        .cloned()
        .collect();
    if others.len() + 1 != variants.len() || others.len() != 1 {
        return;
    }
    schema.remove("oneOf");
    let Value::Object(inner) = others[0].clone() else {
        return;
    };
    if inner.contains_key("$ref") {
        // 3.0 ignores a reference's siblings: `nullable` needs a wrapper.
        schema.insert("allOf".into(), json!([inner]));
    } else {
        for (key, value) in inner {
            schema.entry(key).or_insert(value);
        }
    }
    schema.insert("nullable".into(), json!(true));
}

/// Each integer format utoipa writes: its range, and whether 3.0 defines it.
const RANGES: &[(&str, i128, i128, bool)] = &[
    ("int32", i32::MIN as i128, i32::MAX as i128, true),
    ("int64", i64::MIN as i128, i64::MAX as i128, true),
    ("u-int32", 0, u32::MAX as i128, false),
    ("u-int64", 0, u64::MAX as i128, false),
];

fn integer_range(schema: &mut Map<String, Value>) {
    if schema.get("type").and_then(Value::as_str) != Some("integer") {
        return;
    }
    let format = schema
        .get("format")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some((_, low, high, defined)) = RANGES.iter().find(|(name, ..)| *name == format) {
        for (bound, value) in [("minimum", *low), ("maximum", *high)] {
            // A signed type's lowest value says nothing a client needs.
            let meaningful = value != i128::from(i32::MIN) && value != i128::from(i64::MIN);
            if meaningful && !schema.contains_key(bound) {
                schema.insert(bound.into(), integer(value));
            }
        }
        if !defined {
            schema.remove("format");
        }
    }
    // utoipa writes an unsigned field's implied minimum as `0.0`.
    for bound in ["minimum", "maximum"] {
        if let Some(whole) = schema
            .get(bound)
            .and_then(Value::as_f64)
            .filter(|value| value.fract() == 0.0 && schema[bound].is_f64())
        {
            schema.insert(bound.into(), json!(whole as i64));
        }
    }
}

fn integer(value: i128) -> Value {
    u64::try_from(value)
        .map(Value::from)
        .or_else(|_| i64::try_from(value).map(Value::from))
        .unwrap_or(Value::Null)
}

fn closed(schema: &mut Map<String, Value>) {
    if schema.get("type").and_then(Value::as_str) == Some("object")
        && schema.contains_key("properties")
    {
        schema.entry("additionalProperties").or_insert(json!(false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(mut value: Value) -> Value {
        rewrite(&mut value);
        value
    }

    #[test]
    fn nullability_is_written_the_3_0_way() {
        assert_eq!(
            rendered(json!({"type": ["string", "null"], "format": "date-time"})),
            json!({"type": "string", "format": "date-time", "nullable": true})
        );
        assert_eq!(
            rendered(json!({"oneOf": [{"type": "null"},
                {"type": "object", "properties": {"a": {"type": "boolean"}}}]})),
            json!({"type": "object", "properties": {"a": {"type": "boolean"}},
                "additionalProperties": false, "nullable": true})
        );
        assert_eq!(
            rendered(json!({"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/A"}]})),
            json!({"allOf": [{"$ref": "#/components/schemas/A"}], "nullable": true})
        );
    }

    #[test]
    fn integer_formats_state_their_range() {
        assert_eq!(
            rendered(json!({"type": "integer", "format": "u-int32", "minimum": 0.0})),
            json!({"type": "integer", "minimum": 0, "maximum": 4_294_967_295_u64})
        );
        assert_eq!(
            rendered(json!({"type": "integer", "format": "int64", "minimum": 1})),
            json!({"type": "integer", "format": "int64", "minimum": 1,
                "maximum": i64::MAX})
        );
        assert_eq!(
            rendered(json!({"type": "integer", "format": "u-int32", "maximum": 100})),
            json!({"type": "integer", "minimum": 0, "maximum": 100})
        );
    }

    #[test]
    fn an_optional_body_is_not_required_and_never_null() {
        let mut operation = json!({"requestBody": {"content": {"application/json": {"schema":
            {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Body"}]}}}}});
        optional_body(&mut operation);
        assert_eq!(
            operation,
            json!({"requestBody": {"required": false, "content": {"application/json":
                {"schema": {"$ref": "#/components/schemas/Body"}}}}})
        );
    }

    #[test]
    fn objects_with_properties_are_closed_and_free_form_ones_stay_open() {
        assert_eq!(
            rendered(json!({"type": "object", "properties": {}})),
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
        assert_eq!(
            rendered(json!({"type": "object"})),
            json!({"type": "object"})
        );
    }
}
