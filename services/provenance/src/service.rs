//! The provenance service's state and its written answers.

use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::clock::Clock;
use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;

use crate::link::RegistryLink;
use crate::store::memories::{self, MemoryRow};

/// Provenance: its pool, its way to registry, its clock.
#[derive(Debug, Clone)]
pub struct Provenance {
    pub(crate) pool: PgPool,
    pub(crate) link: RegistryLink,
    pub(crate) clock: Clock,
}

/// What a remember or revise answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub memory_id: Uuid,
    pub commitment_id: Option<Uuid>,
    /// The run the write's events carry, if any.
    pub stamp: Option<Uuid>,
}

impl Provenance {
    pub fn new(pool: PgPool, link: RegistryLink, clock: Clock) -> Provenance {
        Provenance { pool, link, clock }
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// A memory by id, or 404.
    pub async fn memory(&self, tenant_id: Uuid, id: Uuid) -> Result<MemoryRow, ApiError> {
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let row = memories::find(&mut transaction, tenant_id, id).await?;
        transaction.commit().await?;
        row.ok_or_else(|| ApiError::not_found("no memory with that id"))
    }
}
