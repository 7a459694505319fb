//! Settings read from the environment: human durations, bounds, strict booleans, secrets from
//! files, and connection URLs and tokens that never print.

use std::time::Duration;

use super::*;

#[test]
fn durations_accept_human_forms_and_name_the_variable_on_error() {
    let env = Env::from_pairs([("A", "24h"), ("B", "90s"), ("C", "soon")]);
    assert_eq!(
        env.duration("A", Duration::ZERO),
        Ok(Duration::from_secs(86_400))
    );
    assert_eq!(
        env.duration("B", Duration::ZERO),
        Ok(Duration::from_secs(90))
    );
    assert_eq!(
        env.duration("D", Duration::from_secs(5)),
        Ok(Duration::from_secs(5))
    );
    let error = env.duration("C", Duration::ZERO).expect_err("malformed");
    assert_eq!(error.key, "C");
}

#[test]
fn bounds_are_enforced() {
    let env = Env::from_pairs([("N", "601")]);
    assert!(env.bounded_u64("N", 30, 1, 600).is_err());
    assert_eq!(env.bounded_u64("M", 30, 1, 600), Ok(30));
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
    let env = Env::from_pairs([("T", "1"), ("F", "off"), ("X", "maybe")]);
    assert_eq!(env.bool("T", false), Ok(true));
    assert_eq!(env.bool("F", true), Ok(false));
    assert!(env.bool("X", false).is_err());
}
