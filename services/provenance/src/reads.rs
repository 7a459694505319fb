//! Reads of one memory: the row, and its history as metadata only.

use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;

use crate::service::Provenance;
use crate::store::events::{self, HistoryRow};

impl Provenance {
    /// A memory's events, oldest first, with payloads reduced to their shape. 404 when the
    /// memory does not exist.
    pub async fn history(
        &self,
        tenant_id: Uuid,
        memory_id: Uuid,
    ) -> Result<Vec<HistoryRow>, ApiError> {
        self.memory(tenant_id, memory_id).await?;
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let rows = events::history(&mut transaction, tenant_id, memory_id).await?;
        transaction.commit().await?;
        Ok(rows)
    }
}
