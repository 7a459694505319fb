//! The console's static files, embedded in the binary at build time (no web server, no build
//! step, nothing fetched). Vendored libraries keep their version in the name and their licence
//! beside them (`gateway/assets/console/vendor/README.md`); they are cached for a year, the
//! console's own files for five minutes.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// One embedded file.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
    /// Versioned in its name: safe to cache for good.
    pub immutable: bool,
}

/// Every file the console serves under `/console/assets/`.
pub const ASSETS: &[Asset] = &[
    Asset {
        name: "console.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../assets/console/console.css"),
        immutable: false,
    },
    Asset {
        name: "console.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../assets/console/console.js"),
        immutable: false,
    },
    Asset {
        name: "htmx-2.0.11.min.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../assets/console/vendor/htmx-2.0.11.min.js"),
        immutable: true,
    },
    Asset {
        name: "chart-4.6.1.umd.min.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../assets/console/vendor/chart-4.6.1.umd.min.js"),
        immutable: true,
    },
    Asset {
        name: "LICENSES.txt",
        content_type: "text/plain; charset=utf-8",
        body: include_bytes!("../../assets/console/vendor/LICENSES.txt"),
        immutable: false,
    },
];

/// The file called `name`, if embedded.
pub fn find(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|asset| asset.name == name)
}

/// `GET /console/assets/{name}`: public (the sign-in page needs them), never a tenant's data.
pub async fn serve(Path(name): Path<String>) -> Response {
    let Some(asset) = find(&name) else {
        return (StatusCode::NOT_FOUND, "no such console asset").into_response();
    };
    let cache = if asset.immutable {
        "public, max-age=31536000, immutable"
    } else {
        "public, max-age=300"
    };
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
        ],
        asset.body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_embedded_and_found_by_exact_name() {
        for asset in ASSETS {
            assert!(!asset.body.is_empty(), "{}", asset.name);
            assert_eq!(find(asset.name).map(|found| found.name), Some(asset.name));
        }
        assert!(find("../Cargo.toml").is_none());
        assert!(find("console.CSS").is_none());
    }

    #[test]
    fn vendored_scripts_carry_no_source_map_reference() {
        // A map the console does not serve would be a 404 in every browser's console.
        for asset in ASSETS.iter().filter(|asset| asset.immutable) {
            let text = String::from_utf8_lossy(asset.body);
            assert!(!text.contains("sourceMappingURL"), "{}", asset.name);
        }
    }
}
