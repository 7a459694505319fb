//! Histogram bucket boundaries fitted to what Baton measures.
//!
//! The SDK's default boundaries (0, 5, 10, 25 … 10000) suit milliseconds; recorded in seconds
//! every request falls into the first bucket and no percentile can be computed. Each latency
//! histogram is recorded in the unit its semantic convention names, with boundaries spread
//! over the range actually observed: sub-millisecond in-process calls up to the 10 s request
//! timeout.

/// `http.server.request.duration` (s): 0.5 ms to 10 s, roughly ×2 per bucket.
pub const HTTP_SECONDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
    5.0, 7.5, 10.0,
];

/// `rpc.server.duration` / `rpc.client.duration` (ms, the convention that names these
/// instruments): 0.5 ms to 10 s.
pub const RPC_MILLISECONDS: &[f64] = &[
    0.5, 1.0, 2.5, 5.0, 7.5, 10.0, 25.0, 50.0, 75.0, 100.0, 250.0, 500.0, 750.0, 1000.0, 2500.0,
    5000.0, 7500.0, 10000.0,
];

/// `db.client.operation.duration` (s): 0.1 ms (a cached plan on a warm connection) to 10 s.
pub const DB_SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// Outbound HTTP (`http.client.request.duration`, s): the judge can take up to a minute.
pub const HTTP_CLIENT_SECONDS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0,
];

/// Counts per pass (`baton.closer.sweep.closed`): zero is the common case, a backlog can be
/// thousands.
pub const COUNTS: &[f64] = &[
    0.0, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 5000.0,
];

/// Lags (s): a close to its finished closer pass (`baton.closer.lag`), a usage row's activity
/// to the upload that stores it (`baton.usage.ingest.delay`). Seconds normally, hours when a
/// pass is backed off or a machine was offline.
pub const LAG_SECONDS: &[f64] = &[
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0,
];

/// Usage rows in one uploaded batch (`baton.usage.batch.rows`): one to the batch limit of
/// 10 000 (`baton_usage::validate::MAX_USAGE`); a batch of deliveries alone has none.
pub const ROWS: &[f64] = &[
    0.0, 1.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0,
];

/// An upload's store work (`baton.usage.upload.duration`, s): the price table, the tenant's
/// upload lock and the transaction. Milliseconds for a hook's batch, seconds for a full one;
/// the server abandons a call at its 10 s request timeout.
pub const UPLOAD_SECONDS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_ascend_strictly_and_cover_the_request_timeout() {
        for (name, bounds, timeout) in [
            ("http", HTTP_SECONDS, 10.0),
            ("rpc", RPC_MILLISECONDS, 10_000.0),
            ("http client", HTTP_CLIENT_SECONDS, 60.0),
            ("db", DB_SECONDS, 10.0),
            ("counts", COUNTS, 1000.0),
            ("lag", LAG_SECONDS, 3600.0),
            ("rows", ROWS, 10_000.0),
            ("upload", UPLOAD_SECONDS, 10.0),
        ] {
            assert!(
                bounds.windows(2).all(|pair| pair[0] < pair[1]),
                "{name} ascends"
            );
            assert!(
                bounds.last().copied().unwrap_or(0.0) >= timeout,
                "{name} covers"
            );
        }
        // A 2 ms request and a 200 ms request land in different buckets in both units.
        let bucket = |bounds: &[f64], value: f64| bounds.iter().position(|b| value <= *b);
        assert_ne!(bucket(HTTP_SECONDS, 0.002), bucket(HTTP_SECONDS, 0.2));
        assert_ne!(
            bucket(RPC_MILLISECONDS, 2.0),
            bucket(RPC_MILLISECONDS, 200.0)
        );
    }
}
