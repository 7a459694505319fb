//! The briefing selector: the lens a session reads memories through.
//!
//! One typed value serves every transport: the gateway parses it strictly from JSON, services
//! receive it as `baton.common.v1.Selector`, registry stores it as jsonb. Comparison is on the
//! typed value, so key order (and an omitted `includeUnscoped: false`) never makes two equal
//! selectors differ.

use baton_proto::common::v1 as proto;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::text;

/// A validated selector (CONTRACT "Shared field types").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Selector {
    All {},
    Scope {
        scope: String,
    },
    Project {
        project: String,
    },
    ScopeProject {
        scope: String,
        project: String,
        #[serde(rename = "includeUnscoped", default)]
        include_unscoped: bool,
    },
}

impl Default for Selector {
    fn default() -> Selector {
        Selector::All {}
    }
}

impl Selector {
    /// Applies the field rules (scope slug, project trimmed 1..256) and returns the canonical
    /// value.
    pub fn validated(self) -> Result<Selector, ApiError> {
        Ok(match self {
            Selector::All {} => Selector::All {},
            Selector::Scope { scope } => Selector::Scope {
                scope: text::scope(&scope)?,
            },
            Selector::Project { project } => Selector::Project {
                project: text::project(&project)?,
            },
            Selector::ScopeProject {
                scope,
                project,
                include_unscoped,
            } => Selector::ScopeProject {
                scope: text::scope(&scope)?,
                project: text::project(&project)?,
                include_unscoped,
            },
        })
    }

    /// From the wire; an absent selector is `{kind: all}`, a set message with no variant is an
    /// error.
    pub fn from_proto(selector: Option<proto::Selector>) -> Result<Selector, ApiError> {
        let Some(selector) = selector else {
            return Ok(Selector::All {});
        };
        let value = match selector.kind {
            None => return Err(ApiError::invalid_input("selector.kind is required")),
            Some(proto::selector::Kind::All(_)) => Selector::All {},
            Some(proto::selector::Kind::Scope(variant)) => Selector::Scope {
                scope: variant.scope,
            },
            Some(proto::selector::Kind::Project(variant)) => Selector::Project {
                project: variant.project,
            },
            Some(proto::selector::Kind::ScopeProject(variant)) => Selector::ScopeProject {
                scope: variant.scope,
                project: variant.project,
                include_unscoped: variant.include_unscoped,
            },
        };
        value.validated()
    }

    pub fn to_proto(&self) -> proto::Selector {
        let kind = match self {
            Selector::All {} => proto::selector::Kind::All(proto::SelectorAll {}),
            Selector::Scope { scope } => proto::selector::Kind::Scope(proto::SelectorScope {
                scope: scope.clone(),
            }),
            Selector::Project { project } => {
                proto::selector::Kind::Project(proto::SelectorProject {
                    project: project.clone(),
                })
            }
            Selector::ScopeProject {
                scope,
                project,
                include_unscoped,
            } => proto::selector::Kind::ScopeProject(proto::SelectorScopeProject {
                scope: scope.clone(),
                project: project.clone(),
                include_unscoped: *include_unscoped,
            }),
        };
        proto::Selector { kind: Some(kind) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Selector, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn key_order_does_not_matter() {
        let forward = parse(r#"{"kind":"scope","scope":"work"}"#).expect("valid");
        let reversed = parse(r#"{"scope":"work","kind":"scope"}"#).expect("valid");
        assert_eq!(forward, reversed);
        let other = parse(r#"{"kind":"scope","scope":"personal"}"#).expect("valid");
        assert_ne!(forward, other);
    }

    #[test]
    fn include_unscoped_defaults_to_false() {
        let omitted =
            parse(r#"{"kind":"scope_project","scope":"w","project":"p"}"#).expect("valid");
        let explicit =
            parse(r#"{"includeUnscoped":false,"project":"p","scope":"w","kind":"scope_project"}"#)
                .expect("valid");
        assert_eq!(omitted, explicit);
    }

    #[test]
    fn variants_are_strict() {
        for bad in [
            r#"{"kind":"all","scope":"x"}"#,
            r#"{"kind":"scope"}"#,
            r#"{"kind":"everything"}"#,
            r#"{"kind":"project","project":"p","includeUnscoped":true}"#,
            r#"{"scope":"x"}"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn field_rules_apply() {
        let padded = Selector::Project {
            project: "  repo ".to_string(),
        };
        assert_eq!(
            padded.validated(),
            Ok(Selector::Project {
                project: "repo".to_string()
            })
        );
        let bad_scope = Selector::Scope {
            scope: "Work".to_string(),
        };
        assert!(bad_scope.validated().is_err());
    }

    #[test]
    fn proto_round_trip() {
        let selector = Selector::ScopeProject {
            scope: "work".to_string(),
            project: "baton".to_string(),
            include_unscoped: true,
        };
        assert_eq!(
            Selector::from_proto(Some(selector.to_proto())),
            Ok(selector)
        );
        assert_eq!(Selector::from_proto(None), Ok(Selector::All {}));
    }
}
