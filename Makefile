# Baton: `make run` serves everything locally, `make test` runs the whole suite.
# Both bring up what they need first: scripts/services-up.sh starts (or installs, on Debian and
# Ubuntu) PostgreSQL on 127.0.0.1:5432 and RabbitMQ on 127.0.0.1:5672.

SHELL := /bin/bash
CARGO ?= cargo

# Local defaults (DESIGN section 7). Override on the command line or in the environment.
export BATON_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/baton
export BATON_SERVICE_TOKEN ?= local-dev-service-token
# The services' SQL is checked at build time against the descriptions committed in
# .sqlx/ (scripts/sqlx-data.sh writes them from the migrations); no build needs a database.
export SQLX_OFFLINE ?= true

.PHONY: run build test lint deploy-check bench fmt eval-closer harnesses services browser nextest sqlx-data sqlx-check

build:
	$(CARGO) build --workspace --bins

## Build, migrate, then serve every service in one process (Ctrl-C stops it).
run: export BATON_CLOSER__ENABLED ?= true
run: services build
	$(CARGO) run -q --bin baton -- migrate
	@echo
	@echo "Baton is starting on http://127.0.0.1:8080 (gRPC registry on 127.0.0.1:50051)."
	@echo "Create a tenant and its ingest API key (for the hook) in another terminal:"
	@echo "  BATON_DATABASE_URL=$(BATON_DATABASE_URL) $(CARGO) run -q --bin baton -- tenant create --name me"
	@echo "The console is at http://127.0.0.1:8080/console ; mint its sign-in key with:"
	@echo "  BATON_DATABASE_URL=$(BATON_DATABASE_URL) $(CARGO) run -q --bin baton -- key create --tenant TENANT_ID --scope console"
	@echo
	$(CARGO) run -q --bin baton -- serve all --no-migrate

# Schemathesis lives in a virtual environment outside the clone (.ci/schemathesis-venv).
export BATON_VENV ?= /var/tmp/baton-venv
export BATON_SCHEMATHESIS ?= $(BATON_VENV)/bin/st

## The whole suite: unit, service (real Postgres/RabbitMQ), end-to-end (real binaries, the real
## Claude Code and Codex CLIs) and Schemathesis over the served OpenAPI document. Every test
## creates and drops its own database.
test: services build harnesses browser nextest
	.ci/schemathesis-venv
	$(CARGO) nextest run --workspace --no-fail-fast

## PostgreSQL and RabbitMQ running and accepting connections (idempotent).
services:
	bash scripts/services-up.sh

## The pinned cargo-nextest the suite runs under (its test groups serialise the tests that
## share a broker window; idempotent).
nextest:
	bash scripts/install-nextest.sh

## Debian's Chromium and chromedriver, for the console's browser tests (idempotent).
browser:
	bash scripts/install-browser.sh

## The real harness CLIs the end-to-end tests drive, and ccusage for the bench (npm, pinned).
harnesses:
	bash scripts/install-harnesses.sh

lint: deploy-check
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## k8s/ and deploy/: rendered overlays validated for Kubernetes 1.29-1.34, every container's
## variables against the config sources, dashboards and alerts against the metrics the code
## emits, promtool on the rules (installs its tools on first use; see the script's header).
deploy-check:
	.ci/deploy-checks

fmt:
	$(CARGO) fmt --all

## After changing a service's query or a migration: rewrite .sqlx/ from a scratch
## database migrated from services/*/migrations (needs PostgreSQL, see scripts/sqlx-data.sh).
sqlx-data: services
	bash scripts/sqlx-data.sh write

## Fails when .sqlx/ is not what today's queries and migrations describe (CI runs it).
sqlx-check: services
	bash scripts/sqlx-data.sh check

## Benchmarks against same-run baselines; they print ratios and never fail on a timing.
bench:
	$(CARGO) build --release --workspace --bins
	$(CARGO) run --release -q -p baton-bench -- all

## The closer's judge over the labelled corpus in eval/closer (BATON_CLOSER__JUDGE=evidence|openai), dev and held-out reported apart.
eval-closer:
	$(CARGO) run -q --bin baton -- eval-closer --holdout
