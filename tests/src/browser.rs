//! A real headless Chromium driven over WebDriver (Debian's `chromium` and `chromedriver`,
//! which `.ci/run` installs): one chromedriver per test on a free port, its browser in a
//! chosen time zone, and screenshots saved as test artefacts.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use tokio::process::{Child, Command};

/// Where a browser test's screenshots go: `$BATON_SCREENSHOTS`, or `console-screenshots`
/// beside the build's target folder.
pub fn screenshot_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("BATON_SCREENSHOTS") {
        return PathBuf::from(dir);
    }
    let executable = std::env::current_exe().expect("executable path");
    // target/<profile>/deps/<test> → target/console-screenshots
    executable
        .ancestors()
        .nth(3)
        .map(|target| target.join("console-screenshots"))
        .unwrap_or_else(|| std::env::temp_dir().join("console-screenshots"))
}

fn find(variable: &str, candidates: &[&str]) -> PathBuf {
    if let Some(path) = std::env::var_os(variable) {
        return PathBuf::from(path);
    }
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no {} found ({variable} unset): run scripts/install-browser.sh (.ci/run does)",
                candidates[0]
            )
        })
}

/// A headless Chromium session, and the chromedriver serving it (stopped on drop).
pub struct Browser {
    pub client: Client,
    _driver: Child,
}

impl Browser {
    /// A fresh browser profile whose clock reads in `zone` (an IANA name).
    pub async fn start(zone: &str) -> Browser {
        let driver_path = find(
            "BATON_CHROMEDRIVER",
            &["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"],
        );
        let chromium = find(
            "BATON_CHROMIUM",
            &["/usr/bin/chromium", "/usr/bin/chromium-browser"],
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("free port")
            .port();
        let driver = Command::new(&driver_path)
            .arg(format!("--port={port}"))
            .env("TZ", zone)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start chromedriver");
        let profile =
            std::env::temp_dir().join(format!("chromium-{}", uuid::Uuid::new_v4().simple()));
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".to_string(),
            json!({
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1280,1000", "--no-first-run", "--disable-extensions",
                    format!("--user-data-dir={}", profile.display()),
                ],
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(capabilities.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(error) => {
                    assert!(
                        started.elapsed() < Duration::from_secs(20),
                        "chromedriver never accepted a session: {error}"
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        Browser {
            client,
            _driver: driver,
        }
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("navigate");
    }

    /// Waits (at most `timeout`) until the page's text under `css` satisfies `done`; returns it.
    pub async fn wait_text(
        &self,
        css: &str,
        timeout: Duration,
        done: impl Fn(&str) -> bool,
    ) -> String {
        let started = Instant::now();
        loop {
            let text = match self.client.find(Locator::Css(css)).await {
                Ok(element) => element.text().await.unwrap_or_default(),
                Err(_) => String::new(),
            };
            if done(&text) {
                return text;
            }
            assert!(
                started.elapsed() < timeout,
                "{css} never matched; last text: {text:?}; page: {:?}",
                self.body_text().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The text of the first element matching `css`, if any.
    pub async fn text(&self, css: &str) -> Option<String> {
        match self.client.find(Locator::Css(css)).await {
            Ok(element) => element.text().await.ok(),
            Err(_) => None,
        }
    }

    /// An attribute of the first element matching `css`.
    pub async fn attribute(&self, css: &str, name: &str) -> Option<String> {
        let element = self.client.find(Locator::Css(css)).await.ok()?;
        element.attr(name).await.ok().flatten()
    }

    pub async fn body_text(&self) -> String {
        self.text("body").await.unwrap_or_default()
    }

    /// Types into the field `css` and submits its form.
    pub async fn fill_and_submit(&self, css: &str, value: &str) {
        let field = self.client.find(Locator::Css(css)).await.expect("field");
        field.clear().await.expect("clear");
        field.send_keys(value).await.expect("type");
        self.click(&format!("form:has({css}) button[type=submit]"))
            .await;
    }

    pub async fn click(&self, css: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|_| panic!("no {css}"))
            .click()
            .await
            .expect("click");
    }

    /// Runs a script in the page and returns its value.
    pub async fn eval(&self, script: &str) -> serde_json::Value {
        self.client.execute(script, vec![]).await.expect("script")
    }

    /// Saves the viewport as `<screenshot dir>/<name>.png`; returns the path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("screenshot");
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("screenshot folder");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write screenshot");
        path
    }

    pub async fn close(self) {
        let _ = self.client.close().await;
    }
}
