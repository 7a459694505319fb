//! The briefing selector's schemas. The gateway parses and writes
//! [`baton_kit::selector::Selector`], which knows nothing of the document; these types mirror
//! its serde shape (tagged by `kind`, closed) and add the field rules `Selector::validated`
//! applies. They are never built: they exist for their schemas.

use utoipa::openapi::schema::{Discriminator, Schema};
use utoipa::openapi::{OpenApi, RefOr};
use utoipa::{Modify, PartialSchema, ToSchema};

use crate::api_schema::text::{Identifier, Scope};

/// The selector a request sends: `includeUnscoped` is optional, `false` by default.
#[derive(ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[schema(as = Selector)]
pub enum SelectorBody {
    All {},
    Scope {
        #[schema(schema_with = Scope::schema)]
        scope: String,
    },
    Project {
        #[schema(schema_with = Identifier::<256>::schema)]
        project: String,
    },
    ScopeProject {
        #[schema(schema_with = Scope::schema)]
        scope: String,
        #[schema(schema_with = Identifier::<256>::schema)]
        project: String,
        #[serde(rename = "includeUnscoped", default)]
        #[schema(default = false)]
        include_unscoped: bool,
    },
}

/// The selector as an answer shows it: `includeUnscoped` always present.
#[derive(ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SelectorAnswer {
    All {},
    Scope {
        #[schema(schema_with = Scope::schema)]
        scope: String,
    },
    Project {
        #[schema(schema_with = Identifier::<256>::schema)]
        project: String,
    },
    ScopeProject {
        #[schema(schema_with = Scope::schema)]
        scope: String,
        #[schema(schema_with = Identifier::<256>::schema)]
        project: String,
        #[serde(rename = "includeUnscoped")]
        include_unscoped: bool,
    },
}

/// Names `kind` as the selectors' discriminator: utoipa writes one only for variants that are
/// references, and these are inline.
pub struct SelectorKinds;

impl Modify for SelectorKinds {
    fn modify(&self, openapi: &mut OpenApi) {
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        for name in [SelectorBody::name(), SelectorAnswer::name()] {
            if let Some(RefOr::T(Schema::OneOf(variants))) = components.schemas.get_mut(&*name) {
                variants.discriminator = Some(Discriminator::new("kind"));
            }
        }
    }
}
