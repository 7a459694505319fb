//! The resource every component reports: who it is, which copy, and where it runs.
//!
//! - `service.name` is the component's ([`super::Component::service_name`]), never
//!   `OTEL_SERVICE_NAME`: one process may run six components (`baton serve all`) and one
//!   variable cannot name them all, and dashboards, alerts and autoscalers select on these exact
//!   names. The manifests therefore no longer set `OTEL_SERVICE_NAME` (an ignored setting
//!   misleads whoever reads the manifest); a `service.name` in `OTEL_RESOURCE_ATTRIBUTES` is
//!   overridden the same way.
//! - `service.instance.id`: the pod name (`HOSTNAME`, which Kubernetes sets to it) or the host's
//!   name, plus 8 random hex digits drawn once per process, so a restarted container (same pod
//!   name) is a new instance and two processes on one laptop differ. An id given in
//!   `OTEL_RESOURCE_ATTRIBUTES` wins.
//! - `deployment.environment.name`: `BATON_DEPLOYMENT_ENVIRONMENT`, else the value in
//!   `OTEL_RESOURCE_ATTRIBUTES`, else `local` (a process nobody told where it runs is a
//!   developer's).
//! - Everything else in `OTEL_RESOURCE_ATTRIBUTES` (the pod, the namespace) is kept: the SDK's
//!   environment detector reads it.

use std::sync::OnceLock;

use opentelemetry::{Key, KeyValue};
use opentelemetry_sdk::Resource;

use crate::config::{DEPLOYMENT_ENVIRONMENT_KEY, Env};

/// The environment reported when none is configured.
pub const DEFAULT_ENVIRONMENT: &str = "local";

/// The resource of one component (or of the process, for [`super::PROCESS_SERVICE_NAME`]).
pub fn resource(service_name: &'static str) -> Resource {
    resource_from(service_name, &Env::from_process(), process_instance_id())
}

fn resource_from(service_name: &'static str, env: &Env, instance_id: &str) -> Resource {
    // What OTEL_RESOURCE_ATTRIBUTES (and the SDK's own detectors) say, before ours.
    let detected = Resource::builder().build();
    let mut builder = Resource::builder()
        .with_service_name(service_name)
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .with_attribute(KeyValue::new("service.namespace", "baton"));
    if detected
        .get(&Key::from_static_str("service.instance.id"))
        .is_none()
    {
        builder = builder.with_attribute(KeyValue::new(
            "service.instance.id",
            instance_id.to_string(),
        ));
    }
    let configured = env
        .optional_string(DEPLOYMENT_ENVIRONMENT_KEY)
        .filter(|value| !value.trim().is_empty());
    let detected_environment = detected.get(&Key::from_static_str("deployment.environment.name"));
    let environment = match (configured, detected_environment) {
        (Some(value), _) => Some(value),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_ENVIRONMENT.to_string()),
    };
    if let Some(environment) = environment {
        builder = builder.with_attribute(KeyValue::new("deployment.environment.name", environment));
    }
    builder.build()
}

/// This process's instance id (see the module documentation); the same for every component.
pub fn process_instance_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let host = std::env::var("HOSTNAME")
            .ok()
            .filter(|name| !name.trim().is_empty())
            .or_else(|| {
                std::fs::read_to_string("/etc/hostname")
                    .ok()
                    .map(|name| name.trim().to_string())
                    .filter(|name| !name.is_empty())
            })
            .unwrap_or_else(|| "baton".to_string());
        format!("{host}-{:08x}", rand::random::<u32>())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attribute(resource: &Resource, key: &'static str) -> Option<String> {
        resource
            .get(&Key::from_static_str(key))
            .map(|value| value.to_string())
    }

    #[test]
    fn the_configured_environment_and_instance_are_on_the_resource() {
        let env = Env::from_pairs([(DEPLOYMENT_ENVIRONMENT_KEY, "prod")]);
        let resource = resource_from("baton-registry", &env, "baton-registry-7d9-abc-0000beef");
        assert_eq!(
            attribute(&resource, "service.name").as_deref(),
            Some("baton-registry")
        );
        assert_eq!(
            attribute(&resource, "deployment.environment.name").as_deref(),
            Some("prod")
        );
        assert_eq!(
            attribute(&resource, "service.instance.id").as_deref(),
            Some("baton-registry-7d9-abc-0000beef")
        );
    }

    #[test]
    fn an_unconfigured_process_is_local_and_its_id_is_host_plus_random() {
        let resource = resource_from("baton-gateway", &Env::from_pairs::<&str, &str>([]), "h-1");
        // OTEL_RESOURCE_ATTRIBUTES is not set under `cargo test` unless the developer sets it.
        if std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_err() {
            assert_eq!(
                attribute(&resource, "deployment.environment.name").as_deref(),
                Some(DEFAULT_ENVIRONMENT)
            );
        }
        let id = process_instance_id();
        let (_host, random) = id.rsplit_once('-').expect("host-random");
        assert_eq!(random.len(), 8);
        assert_eq!(id, process_instance_id(), "one id per process");
    }
}
