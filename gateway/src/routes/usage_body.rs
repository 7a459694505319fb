//! A usage upload's body: read within the usage limit, decoded per `Content-Encoding`.
//!
//! - No `Content-Encoding` (or `identity`): the bytes as sent. `gzip` and `zstd`: decoded.
//!   Anything else, or a list of encodings, is 415 `unsupported_media_type`.
//! - The limit (8 MiB by default) applies to the bytes received and again to the bytes
//!   decoded: decoding stops one byte past the limit, so a decompression bomb costs at most
//!   the limit in memory and answers 413 `payload_too_large`.
//! - A body that does not decode is 400 `invalid_request`, like a body that is not JSON.

use std::io::Read;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use http::HeaderMap;

use baton_kit::error::ErrorCode;

use crate::body::{BodyLimit, too_large};
use crate::response::HttpError;

/// The encodings an upload may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Identity,
    Gzip,
    Zstd,
}

/// The body's encoding from its headers (pure).
pub fn encoding(headers: &HeaderMap) -> Result<Encoding, HttpError> {
    let mut values = headers.get_all(http::header::CONTENT_ENCODING).iter();
    let first = values.next();
    let unsupported = || {
        HttpError::new(
            ErrorCode::UnsupportedMediaType,
            "Content-Encoding must be gzip, zstd or absent",
        )
    };
    if values.next().is_some() {
        return Err(unsupported());
    }
    let Some(value) = first else {
        return Ok(Encoding::Identity);
    };
    let text = value.to_str().map_err(|_| unsupported())?;
    match text.trim().to_ascii_lowercase().as_str() {
        "identity" => Ok(Encoding::Identity),
        "gzip" | "x-gzip" => Ok(Encoding::Gzip),
        "zstd" => Ok(Encoding::Zstd),
        _ => Err(unsupported()),
    }
}

/// Decodes `bytes`, refusing output beyond `limit` (pure, blocking).
pub fn decode(encoding: Encoding, bytes: &[u8], limit: usize) -> Result<Vec<u8>, HttpError> {
    let reader: Box<dyn Read + '_> = match encoding {
        Encoding::Identity => {
            if bytes.len() > limit {
                return Err(too_large());
            }
            return Ok(bytes.to_vec());
        }
        Encoding::Gzip => Box::new(flate2::read::MultiGzDecoder::new(bytes)),
        Encoding::Zstd => Box::new(
            zstd::stream::read::Decoder::new(bytes)
                .map_err(|_| HttpError::new(ErrorCode::InvalidRequest, "body does not decode"))?,
        ),
    };
    let mut decoded = Vec::with_capacity(bytes.len().saturating_mul(4).min(limit));
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut decoded)
        .map_err(|_| HttpError::new(ErrorCode::InvalidRequest, "body does not decode"))?;
    if decoded.len() > limit {
        return Err(too_large());
    }
    Ok(decoded)
}

/// Reads and decodes an upload's body.
pub async fn read(request: Request<Body>, limit: usize) -> Result<Bytes, HttpError> {
    let encoding = encoding(request.headers())?;
    // The router's deadline for the body, with the upload's own byte limit.
    let limits = BodyLimit {
        bytes: limit,
        ..BodyLimit::of(&request)
    };
    let raw = crate::body::read_within(request, limits).await?;
    if encoding == Encoding::Identity {
        return Ok(raw);
    }
    let decoded = tokio::task::spawn_blocking(move || decode(encoding, &raw, limit))
        .await
        .map_err(|_| HttpError::new(ErrorCode::Internal, "decoding task failed"))??;
    Ok(Bytes::from(decoded))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(bytes).expect("write");
        encoder.finish().expect("finish")
    }

    #[test]
    fn only_gzip_zstd_and_identity_are_accepted() {
        let table = [
            (None, Some(Encoding::Identity)),
            (Some("identity"), Some(Encoding::Identity)),
            (Some("gzip"), Some(Encoding::Gzip)),
            (Some("GZIP"), Some(Encoding::Gzip)),
            (Some("zstd"), Some(Encoding::Zstd)),
            (Some("br"), None),
            (Some("deflate"), None),
            (Some("gzip, zstd"), None),
        ];
        for (value, expected) in table {
            let mut headers = HeaderMap::new();
            if let Some(value) = value {
                headers.insert(
                    http::header::CONTENT_ENCODING,
                    value.parse().expect("header"),
                );
            }
            let got = encoding(&headers);
            assert_eq!(got.as_ref().ok().copied(), expected, "{value:?}");
            if let Err(error) = got {
                assert_eq!(error.code, ErrorCode::UnsupportedMediaType);
            }
        }
    }

    #[test]
    fn decoding_stops_at_the_limit_and_garbage_is_a_bad_request() {
        let body = b"{\"hostId\":\"h\"}".repeat(10);
        assert_eq!(
            decode(Encoding::Gzip, &gzip(&body), 1024).expect("gzip"),
            body
        );
        let zstd = zstd::encode_all(&body[..], 3).expect("zstd");
        assert_eq!(decode(Encoding::Zstd, &zstd, 1024).expect("zstd"), body);
        // A bomb: 64 MiB of zeros in a few kilobytes stops one byte past 1 MiB.
        let bomb = gzip(&vec![0u8; 64 << 20]);
        assert!(bomb.len() < 1 << 20, "small on the wire");
        let refused = decode(Encoding::Gzip, &bomb, 1 << 20).expect_err("bomb");
        assert_eq!(refused.code, ErrorCode::PayloadTooLarge);
        let garbage = decode(Encoding::Zstd, b"not zstd at all", 1024).expect_err("garbage");
        assert_eq!(garbage.code, ErrorCode::InvalidRequest);
        let garbage = decode(Encoding::Gzip, b"not gzip at all", 1024).expect_err("garbage");
        assert_eq!(garbage.code, ErrorCode::InvalidRequest);
    }
}
