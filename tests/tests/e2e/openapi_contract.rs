//! The OpenAPI document against the handlers: for every operation it serves, what the
//! document says is what the server does — the statuses it lists (401 without a key, the
//! example's answer), required keys (dropping one is 400), optional keys (`null` is 400),
//! closed objects (an unknown key is 400), bounds, enums, patterns and the character rule
//! (each violated is 400), malformed path ids (the documented status), and every success body
//! matches its schema exactly (no undocumented key, no missing required one).

use serde_json::{Map, Value, json};

use baton_tests::{Baton, Client};

/// How many operations the served document lists.
pub async fn operation_count(client: &Client) -> usize {
    let document = client.get("/api/v1/openapi.json").await.body;
    document["paths"].as_object().map_or(0, |paths| {
        paths
            .values()
            .map(|item| item.as_object().map_or(0, Map::len))
            .sum()
    })
}

fn resolve<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference.trim_start_matches("#/components/schemas/");
            &document["components"]["schemas"][name]
        }
        None => schema,
    }
}

/// Validates `value` against the document's schema subset; the error names the path.
fn validate(document: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let schema = resolve(document, schema);
    if value.is_null() {
        return if schema["nullable"] == json!(true) {
            Ok(())
        } else {
            Err(format!("{at}: null where the document says non-nullable"))
        };
    }
    if let Some(variants) = schema["oneOf"].as_array() {
        let matching = variants
            .iter()
            .filter(|variant| validate(document, variant, value, at).is_ok())
            .count();
        return (matching == 1)
            .then_some(())
            .ok_or(format!("{at}: {matching} oneOf variants match"));
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        return Err(format!("{at}: {value} is not in the enum"));
    }
    let fail = |what: &str| Err(format!("{at}: {value} {what}"));
    match schema["type"].as_str() {
        Some("object") => {
            let Some(map) = value.as_object() else {
                return fail("is not an object");
            };
            let properties = schema["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            for required in schema["required"].as_array().into_iter().flatten() {
                let key = required.as_str().unwrap_or_default();
                if !map.contains_key(key) {
                    return Err(format!("{at}: required {key} missing"));
                }
            }
            for (key, inner) in map {
                let Some(property) = properties.get(key) else {
                    return Err(format!("{at}: undocumented key {key}"));
                };
                validate(document, property, inner, &format!("{at}.{key}"))?;
            }
            Ok(())
        }
        Some("array") => {
            let Some(items) = value.as_array() else {
                return fail("is not an array");
            };
            if schema["maxItems"]
                .as_u64()
                .is_some_and(|max| items.len() as u64 > max)
            {
                return fail("has too many items");
            }
            items.iter().enumerate().try_for_each(|(index, item)| {
                validate(document, &schema["items"], item, &format!("{at}[{index}]"))
            })
        }
        Some("string") => {
            let Some(text) = value.as_str() else {
                return fail("is not a string");
            };
            let pattern_ok = schema["pattern"].as_str().is_none_or(|pattern| {
                regex::Regex::new(pattern)
                    .expect("pattern compiles")
                    .is_match(text)
            });
            if !pattern_ok {
                return fail("does not match its pattern");
            }
            Ok(())
        }
        Some("integer") => {
            let Some(number) = value.as_i64() else {
                return fail("is not an integer");
            };
            let low = schema["minimum"].as_i64().is_none_or(|min| number >= min);
            let high = schema["maximum"].as_i64().is_none_or(|max| number <= max);
            if low && high {
                Ok(())
            } else {
                fail("is out of bounds")
            }
        }
        Some("boolean") => value
            .is_boolean()
            .then_some(())
            .ok_or(format!("{at}: not a bool")),
        _ => Ok(()),
    }
}

/// Bodies that break exactly one documented rule of `schema`, starting from `example`.
fn violations(document: &Value, schema: &Value, example: &Value) -> Vec<(String, Value)> {
    let schema = resolve(document, schema);
    let example = example.as_object().cloned().unwrap_or_default();
    let mut cases = Vec::new();
    let with = |key: &str, value: Value| {
        let mut body = example.clone();
        body.insert(key.to_string(), value);
        Value::Object(body)
    };
    cases.push(("unknown key".to_string(), with("zzUnknown", json!(1))));
    for required in schema["required"].as_array().into_iter().flatten() {
        let key = required.as_str().unwrap_or_default();
        let mut body = example.clone();
        body.remove(key);
        cases.push((format!("{key} missing"), Value::Object(body)));
    }
    for (key, property) in schema["properties"].as_object().into_iter().flatten() {
        let property = resolve(document, property);
        cases.push((format!("{key} null"), with(key, Value::Null)));
        let kind = property["type"].as_str().unwrap_or("object");
        let wrong_type = if kind == "string" {
            json!(7)
        } else {
            json!("7")
        };
        cases.push((format!("{key} wrong type"), with(key, wrong_type)));
        if property["enum"].is_array() {
            cases.push((
                format!("{key} outside its enum"),
                with(key, json!("zz-none")),
            ));
        }
        if let Some(max) = property["maxLength"].as_u64() {
            let long = "a".repeat(max as usize + 1);
            cases.push((format!("{key} over maxLength"), with(key, json!(long))));
        }
        if kind == "string" && property["enum"].is_null() && property["format"].is_null() {
            cases.push((format!("{key} with U+0000"), with(key, json!("a\u{0000}b"))));
            cases.push((format!("{key} with ESC"), with(key, json!("a\u{001b}b"))));
        }
        if let Some(max) = property["maximum"].as_i64() {
            cases.push((format!("{key} over maximum"), with(key, json!(max + 1))));
        }
        if let Some(max) = property["maxItems"].as_u64() {
            let items = vec![
                example
                    .get(key)
                    .and_then(|list| list.get(0))
                    .cloned()
                    .unwrap_or(json!("t"));
                max as usize + 1
            ];
            cases.push((format!("{key} over maxItems"), with(key, json!(items))));
        }
        if property["format"] == json!("uuid") {
            cases.push((format!("{key} not a uuid"), with(key, json!("nope"))));
        }
    }
    cases
}

/// Operations in an order whose examples build on each other; the rest after them.
const ORDER: &[&str] = &[
    "post /api/v1/agent-sessions/open",
    "post /api/v1/agent-sessions/heartbeat",
    "post /api/v1/agent-sessions/pulse",
    "post /api/v1/agent-sessions/triage/begin",
    "post /api/v1/memories",
    "post /api/v1/memories/{id}/resolve",
    "post /api/v1/memories/{id}/revise",
    "post /api/v1/budgets",
    "delete /api/v1/budgets/{id}",
    "post /api/v1/webhooks",
    "delete /api/v1/webhooks/{id}",
];
/// Operations whose example cannot succeed on its own (no armed attempt to complete).
const EXAMPLE_REFUSED: &[&str] = &["post /api/v1/agent-sessions/triage/complete"];

#[tokio::test]
async fn the_document_states_what_the_handlers_enforce() {
    // Hundreds of requests from one key: lift the per-key limit.
    let baton = Baton::unthrottled().await;
    let (_, client) = baton.tenant_client("document").await;
    let anonymous = baton.anonymous();
    let document = anonymous.get("/api/v1/openapi.json").await.body;
    let mut operations: Vec<(String, String, Value)> = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("item") {
            operations.push((method.clone(), path.clone(), operation.clone()));
        }
    }
    let rank = |method: &str, path: &str| {
        let name = format!("{method} {path}");
        ORDER
            .iter()
            .position(|entry| *entry == name)
            .unwrap_or(ORDER.len())
    };
    operations.sort_by_key(|(method, path, _)| {
        (
            rank(method, path),
            path.ends_with("/close"),
            path.ends_with("/archive"),
        )
    });
    let (mut run_id, mut memory_id, mut budget_id) = (String::new(), String::new(), String::new());
    let mut webhook_id = String::new();
    for (method, path, operation) in operations {
        if operation["security"] == json!([]) {
            continue;
        }
        let name = format!("{method} {path}");
        let documented = |status: u16| operation["responses"].get(status.to_string()).is_some();
        if path.ends_with("/archive") {
            // Archive a memory of its own: the shared one has been revised (superseded) by now.
            let fresh = client
                .post(
                    "/api/v1/memories",
                    &json!({"memoryType": "note", "topic": "archive me",
                    "content": "a note to archive"}),
                )
                .await;
            memory_id = fresh.body["memory"]["id"]
                .as_str()
                .expect("memory id")
                .to_string();
        }
        let required_query: Vec<String> = operation["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|parameter| parameter["in"] == "query" && parameter["required"] == true)
            .map(|parameter| {
                let value = parameter["schema"]["enum"][0]
                    .as_str()
                    .expect("an enum example");
                format!("{}={value}", parameter["name"].as_str().unwrap_or_default())
            })
            .collect();
        let own_id = if path.starts_with("/api/v1/budgets/") {
            &budget_id
        } else if path.starts_with("/api/v1/webhooks/") {
            &webhook_id
        } else {
            &memory_id
        };
        let mut url = path
            .replace("{sessionRunId}", &run_id)
            .replace("{id}", own_id);
        if !required_query.is_empty() {
            url = format!("{url}?{}", required_query.join("&"));
        }
        let body = &operation["requestBody"]["content"]["application/json"];
        let verb = method.clone();
        let send = move |who: Client, url: String, body: Option<Value>| {
            let verb = verb.clone();
            async move {
                match (verb.as_str(), body) {
                    ("put", Some(body)) => who.put(&url, &body).await,
                    (_, Some(body)) => who.post(&url, &body).await,
                    ("delete", None) => who.delete(&url).await,
                    (_, None) => who.get(&url).await,
                }
            }
        };
        let example = body.get("example").cloned();
        let unauthenticated = send(anonymous.clone(), url.clone(), example.clone()).await;
        assert_eq!(unauthenticated.status, 401, "{name} without a key");
        assert!(documented(401), "{name} documents 401");
        // Refusals first: they must change nothing the example then relies on.
        if let Some(example) = &example {
            for (case, bad) in violations(&document, &body["schema"], example) {
                let refused = send(client.clone(), url.clone(), Some(bad)).await;
                assert_eq!(
                    (refused.status, refused.body["error"].clone()),
                    (400, json!("invalid_input")),
                    "{name}: {case} must be refused as the document says"
                );
            }
        } else {
            let separator = if url.contains('?') { '&' } else { '?' };
            let strict_url = format!("{url}{separator}zzUnknown=1");
            let refused = send(client.clone(), strict_url, None).await;
            assert_eq!(refused.status, 400, "{name}: unknown query key");
        }
        let answer = send(client.clone(), url.clone(), example.clone()).await;
        assert!(
            documented(answer.status),
            "{name}: {} is not documented",
            answer.status
        );
        if EXAMPLE_REFUSED.contains(&name.as_str()) {
            assert!(answer.status >= 400, "{name}");
        } else {
            assert!(
                answer.status < 300,
                "{name} example answered {} {}",
                answer.status,
                answer.body
            );
            let schema = &operation["responses"][answer.status.to_string()]["content"]["application/json"]
                ["schema"];
            // A 204 has no content to validate.
            if !(schema.is_null() && answer.body.is_null()) {
                validate(&document, schema, &answer.body, &name)
                    .unwrap_or_else(|error| panic!("{error}"));
            }
        }
        if path == "/api/v1/agent-sessions/open" {
            run_id = answer.body["sessionRunId"]
                .as_str()
                .expect("run id")
                .to_string();
        }
        if name == "post /api/v1/budgets" {
            budget_id = answer.body["id"].as_str().expect("budget id").to_string();
        }
        if name == "post /api/v1/webhooks" {
            webhook_id = answer.body["webhook"]["id"]
                .as_str()
                .expect("webhook id")
                .to_string();
        }
        if path == "/api/v1/memories" {
            memory_id = answer.body["memory"]["id"]
                .as_str()
                .expect("memory id")
                .to_string();
        }
        for (parameter, malformed) in [("{sessionRunId}", 400), ("{id}", 404)] {
            if !path.contains(parameter) {
                continue;
            }
            for segment in ["nope", "%ff", "%00", "0190b3a4-7d2e-0c41-9a3b-2f1e4d5c6b7a"] {
                let bad_url = path.replace(parameter, segment);
                let refused = send(client.clone(), bad_url, example.clone()).await;
                assert_eq!(refused.status, malformed, "{name} with {segment}");
                assert!(documented(malformed), "{name} documents {malformed}");
                assert!(
                    refused.body["error"].is_string(),
                    "{name}: JSON error body for {segment}"
                );
            }
        }
    }
}
