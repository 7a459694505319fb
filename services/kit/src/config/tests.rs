//! Settings read from the environment: human durations, bounds, strict booleans, old names,
//! secrets from files, and connection URLs and tokens that never print.

use std::time::Duration;

use super::*;

/// A component's settings as the services declare theirs.
#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
#[serde(default)]
struct Sample {
    /// A bounded duration.
    interval: values::Span<{ values::mins(20) }, { values::secs(1) }, { values::hours(24) }>,
    /// A bounded count.
    attempts: values::Int<12, 1, 50>,
    /// A strict switch.
    enabled: values::Flag<false>,
    /// A secret.
    key: Option<Secret>,
}

impl Settings for Sample {
    const SECTION: &'static str = "sample";
    const RENAMED: &'static [Renamed] = &[Renamed::new("BATON_SAMPLE_INTERVAL", "interval")];
}

#[test]
fn durations_accept_human_forms_and_name_the_variable_on_error() {
    type Window = values::Span<0, 0, { values::days(7) }>;
    assert_eq!(
        Window::parse("24h").map(Window::get),
        Ok(Duration::from_secs(86_400))
    );
    assert_eq!(
        Window::parse(" 90s ").map(Window::get),
        Ok(Duration::from_secs(90))
    );
    assert!(Window::parse("90").is_err(), "a unit is needed");
    type Lenient = values::SpanOrSeconds<0, 0, { values::days(7) }>;
    assert_eq!(
        Lenient::parse("90").map(Lenient::get),
        Ok(Duration::from_secs(90))
    );
    let env = Env::from_pairs([("BATON_SAMPLE__INTERVAL", "soon")]);
    let error = load::<Sample>(&env).expect_err("malformed");
    assert_eq!(error.key, "BATON_SAMPLE__INTERVAL");
    assert!(error.message.starts_with("not a duration"), "{error}");
    let unset = load::<Sample>(&Env::default()).expect("defaults");
    assert_eq!(unset.interval.get(), Duration::from_secs(20 * 60));
}

#[test]
fn bounds_are_enforced() {
    type Attempts = values::Int<30, 1, 600>;
    assert!(Attempts::parse("601").is_err());
    assert_eq!(Attempts::parse("600").map(Attempts::get), Ok(600));
    assert_eq!(Attempts::default().get(), 30);
    let env = Env::from_pairs([("BATON_SAMPLE__INTERVAL", "25h")]);
    let error = load::<Sample>(&env).expect_err("too long");
    assert_eq!(
        error.to_string(),
        "invalid configuration BATON_SAMPLE__INTERVAL: must be between 1s and 1day"
    );
    let env = Env::from_pairs([("BATON_SAMPLE__ATTEMPTS", "51")]);
    assert_eq!(
        load::<Sample>(&env).expect_err("too many").message,
        "must be between 1 and 50, got 51"
    );
}

#[test]
fn an_old_name_still_works_and_both_names_at_odds_are_refused() {
    let old = Env::from_pairs([("BATON_SAMPLE_INTERVAL", "5m")]);
    let settings = load::<Sample>(&old).expect("old name");
    assert_eq!(settings.interval.get(), Duration::from_secs(300));
    let same = old.clone().with("BATON_SAMPLE__INTERVAL", "5m");
    assert!(
        load::<Sample>(&same).is_ok(),
        "the same value under both names"
    );
    let different = old.with("BATON_SAMPLE__INTERVAL", "6m");
    let error = load::<Sample>(&different).expect_err("ambiguous");
    assert_eq!(error.key, "BATON_SAMPLE__INTERVAL");
    assert!(error.message.contains("BATON_SAMPLE_INTERVAL"), "{error}");
    assert!(!error.message.contains("5m") && !error.message.contains("6m"));
}

/// Collects what a test's subscriber writes.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("captured").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn an_old_name_logs_one_line_naming_both_variables_and_not_the_value() {
    #[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
    #[serde(default)]
    struct Renaming {
        window: values::Span<{ values::secs(1) }, 0, { values::hours(1) }>,
    }
    impl Settings for Renaming {
        const SECTION: &'static str = "renaming";
        const RENAMED: &'static [Renamed] = &[Renamed::new("BATON_RENAMING_WINDOW", "window")];
    }
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .without_time()
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let env = Env::from_pairs([("BATON_RENAMING_WINDOW", "42s")]);
        for _ in 0..2 {
            let settings = load::<Renaming>(&env).expect("old name");
            assert_eq!(settings.window.get(), Duration::from_secs(42));
        }
    });
    let text = String::from_utf8(captured.0.lock().expect("captured").clone()).expect("utf-8");
    assert_eq!(
        text.matches("deprecated configuration variable").count(),
        1,
        "{text}"
    );
    assert!(text.contains("old=\"BATON_RENAMING_WINDOW\""), "{text}");
    assert!(text.contains("new=\"BATON_RENAMING__WINDOW\""), "{text}");
    assert!(!text.contains("42"), "{text}");
}

#[test]
fn variables_are_listed_with_their_defaults_and_old_names() {
    let listed = describe::variables::<Sample>();
    let names: Vec<(&str, Option<&str>, Option<&str>)> = listed
        .iter()
        .map(|found| {
            (
                found.name.as_str(),
                found.default.as_deref(),
                found.replaces,
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            (
                "BATON_SAMPLE__INTERVAL",
                Some("20m"),
                Some("BATON_SAMPLE_INTERVAL")
            ),
            ("BATON_SAMPLE__ATTEMPTS", Some("12"), None),
            ("BATON_SAMPLE__ENABLED", Some("false"), None),
            ("BATON_SAMPLE__KEY", None, None),
        ]
    );
    let ((), read) = describe::variables_read(|| {
        let _ = load::<Sample>(&Env::default());
    });
    assert_eq!(read, listed);
}

#[test]
fn a_secret_is_never_repeated_in_an_error() {
    // A section where a secret's field expects text: the error names the variable only.
    let env = Env::from_pairs([("BATON_SAMPLE__KEY__PART", "hunter2-secret")]);
    let error = load::<Sample>(&env).expect_err("a section, not text");
    assert_eq!(error.key, "BATON_SAMPLE__KEY");
    assert!(!error.to_string().contains("hunter2"), "{error}");
}

#[test]
fn service_token_is_required_long_and_never_printed() {
    assert!(CommonConfig::from_env(&Env::default()).is_err());
    let short = Env::from_pairs([("BATON_SERVICE_TOKEN", "short")]);
    assert!(CommonConfig::from_env(&short).is_err());
    let good = Env::from_pairs([("BATON_SERVICE_TOKEN", "a-long-enough-token")]);
    let config = CommonConfig::from_env(&good).expect("valid");
    assert!(!format!("{config:?}").contains("a-long-enough-token"));
}

#[test]
fn connection_urls_never_print_their_password() {
    let cases = [
        (
            "postgres://baton_registry:hunter2-pw@db.internal:5432/baton?sslmode=require",
            "postgres://baton_registry:***@db.internal:5432/baton?sslmode=require",
        ),
        (
            "amqp://guest:guest@127.0.0.1:5672/%2f",
            "amqp://guest:***@127.0.0.1:5672/%2f",
        ),
        (
            "postgres://127.0.0.1:5432/baton",
            "postgres://127.0.0.1:5432/baton",
        ),
        ("not a url but maybe a secret", "<unparseable url>"),
    ];
    for (raw, shown) in cases {
        let url = SecretUrl::new(raw.to_string());
        assert_eq!(url.to_string(), shown, "{raw}");
        assert_eq!(format!("{url:?}"), format!("SecretUrl({shown})"));
        assert_eq!(url.expose(), raw);
    }
    let env = Env::from_pairs([
        ("BATON_SERVICE_TOKEN", "a-long-enough-token"),
        ("BATON_DATABASE_URL", "postgres://u:hunter2-pw@h/baton"),
    ]);
    let config = CommonConfig::from_env(&env).expect("valid");
    let printed = format!("{config:?}");
    assert!(!printed.contains("hunter2-pw"), "{printed}");
    assert!(printed.contains("postgres://u:***@h/baton"), "{printed}");
}

#[test]
fn secrets_come_from_files_and_both_forms_at_once_are_refused() {
    let dir = std::env::temp_dir().join(format!("baton-env-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("url");
    std::fs::write(&file, "postgres://u:pw@h/baton\n").expect("write");
    let path = file.to_str().expect("path");
    let env = Env::from_pairs([("BATON_DATABASE_URL_FILE", path)])
        .with_files()
        .expect("read");
    assert_eq!(
        env.raw("BATON_DATABASE_URL"),
        Some("postgres://u:pw@h/baton")
    );
    let both = Env::from_pairs([
        ("BATON_DATABASE_URL_FILE", path),
        ("BATON_DATABASE_URL", "postgres://other/baton"),
    ]);
    assert_eq!(
        both.with_files().expect_err("ambiguous").key,
        "BATON_DATABASE_URL_FILE"
    );
    let missing = Env::from_pairs([("BATON_AMQP_URL_FILE", "/nonexistent/baton/secret")]);
    let error = missing.with_files().expect_err("unreadable");
    assert_eq!(error.key, "BATON_AMQP_URL_FILE");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn database_tls_settings_reach_every_database_url_unless_it_sets_its_own() {
    let env = Env::from_pairs([
        ("BATON_DATABASE_SSLMODE", "verify-full"),
        ("BATON_REGISTRY__DATABASE_URL", "postgres://r@db/baton"),
        (
            "BATON_CLOSER__MAINTENANCE_DATABASE_URL",
            "postgres://m@db/baton?sslmode=require",
        ),
    ])
    .with_database_tls()
    .expect("valid");
    assert_eq!(
        env.raw("BATON_REGISTRY__DATABASE_URL"),
        Some("postgres://r@db/baton?sslmode=verify-full")
    );
    assert_eq!(
        env.raw("BATON_CLOSER__MAINTENANCE_DATABASE_URL"),
        Some("postgres://m@db/baton?sslmode=require"),
        "a URL's own setting wins"
    );
    assert_eq!(
        env.raw("BATON_DATABASE_URL"),
        Some("postgres://127.0.0.1:5432/baton?sslmode=verify-full"),
        "the default URL too"
    );
    let bad = Env::from_pairs([("BATON_DATABASE_SSLMODE", "always")]);
    assert_eq!(
        bad.with_database_tls().expect_err("bad").key,
        "BATON_DATABASE_SSLMODE"
    );
    let missing = Env::from_pairs([("BATON_DATABASE_SSLROOTCERT", "/nonexistent/ca.pem")]);
    assert!(missing.with_database_tls().is_err());
    let untouched = Env::from_pairs([("BATON_DATABASE_URL", "postgres://h/b")])
        .with_database_tls()
        .expect("valid");
    assert_eq!(untouched.raw("BATON_DATABASE_URL"), Some("postgres://h/b"));
}

#[test]
fn booleans_are_strict() {
    type Switch = values::Flag<false>;
    assert_eq!(Switch::parse("1").map(Switch::get), Ok(true));
    assert_eq!(Switch::parse("off").map(Switch::get), Ok(false));
    assert_eq!(Switch::parse(" YES ").map(Switch::get), Ok(true));
    assert!(Switch::parse("maybe").is_err());
    let env = Env::from_pairs([("BATON_SAMPLE__ENABLED", "maybe")]);
    assert_eq!(
        load::<Sample>(&env).expect_err("strict").key,
        "BATON_SAMPLE__ENABLED"
    );
}
