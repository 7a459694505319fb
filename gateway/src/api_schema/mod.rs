//! The vocabulary the API document is derived with: field kinds the bodies and answers share
//! (text rules, ids, instants, enumerations), the error answers and the selector.
//!
//! A kind is a unit type whose only job is its schema. A body or answer field names it with
//! `#[schema(schema_with = Kind::schema)]`, a query parameter with `inline(Kind)`; the field
//! keeps its Rust type (a `String` the service validates), so the gateway's behaviour does not
//! depend on the document. A kind says what the server enforces: the bound, the character rule
//! as a pattern, the enumeration. The document itself is assembled in the `openapi` module.

use std::marker::PhantomData;

use utoipa::openapi::schema::{ArrayBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{RefOr, schema::ObjectBuilder};
use utoipa::{PartialSchema, ToSchema};

/// Declares a kind: a unit type (optionally with a `const MAX: usize`) and its schema.
macro_rules! kind {
    ($(#[$meta:meta])* $name:ident => $schema:expr) => {
        $(#[$meta])*
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                $schema.into()
            }
        }

        impl utoipa::ToSchema for $name {}
    };
    ($(#[$meta:meta])* $name:ident<const $max:ident: usize> => $schema:expr) => {
        $(#[$meta])*
        pub struct $name<const $max: usize>;

        impl<const $max: usize> utoipa::PartialSchema for $name<$max> {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                $schema.into()
            }
        }

        impl<const $max: usize> utoipa::ToSchema for $name<$max> {}
    };
}

/// Declares a kind whose values are a closed set of strings.
macro_rules! choice {
    ($(#[$meta:meta])* $name:ident: $($value:literal),+ $(,)?) => {
        kind!($(#[$meta])* $name => utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some([$($value),+])));
    };
}

pub mod enums;
pub mod errors;
pub mod selector;
pub mod text;

/// `T` or `null`: an answer's key that is always written, `null` when there is nothing.
pub struct Nullable<T>(PhantomData<T>);

impl<T: PartialSchema> PartialSchema for Nullable<T> {
    fn schema() -> RefOr<Schema> {
        let mut schema = T::schema();
        if let RefOr::T(Schema::Object(object)) = &mut schema
            && let SchemaType::Type(kind) = object.schema_type.clone()
        {
            object.schema_type = SchemaType::from_iter([kind, Type::Null]);
        }
        schema
    }
}

impl<T: PartialSchema> ToSchema for Nullable<T> {}

/// An array of `T`, at most `MAX` items.
pub struct List<T, const MAX: usize>(PhantomData<T>);

impl<T: PartialSchema, const MAX: usize> PartialSchema for List<T, MAX> {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(T::schema())
            .max_items(Some(MAX))
            .into()
    }
}

impl<T: PartialSchema, const MAX: usize> ToSchema for List<T, MAX> {}

/// An integer in `MIN..=MAX`, for a bound the gateway checks itself (the constant its check
/// reads is the one the document states).
pub struct Bounded<const MIN: i64, const MAX: i64>;

impl<const MIN: i64, const MAX: i64> PartialSchema for Bounded<MIN, MAX> {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(MIN))
            .maximum(Some(MAX))
            .into()
    }
}

impl<const MIN: i64, const MAX: i64> ToSchema for Bounded<MIN, MAX> {}
