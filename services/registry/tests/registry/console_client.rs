//! A registry served on port 0 with the test clock on, and a client whose every call names its
//! instant, so derived states are deterministic.

use chrono::{DateTime, Duration, Utc};
use tonic::Status;
use tonic::transport::Channel;
use uuid::Uuid;

use baton_kit::clock::{iso, to_timestamp};
use baton_kit::grpc::{Outbound, OutboundCall};
use baton_proto::registry::v1 as proto;
use baton_proto::registry::v1::session_registry_client::SessionRegistryClient;

use crate::{Harness, t};

const TOKEN: &str = "registry-console-test-token";

/// "Now" of every console test: the harness's fixed instant a day in, so sessions can be
/// opened hours before it.
pub fn now() -> DateTime<Utc> {
    t(24)
}

/// `now()` minus `seconds`.
pub fn ago(seconds: i64) -> DateTime<Utc> {
    now() - Duration::seconds(seconds)
}

/// One tenant's view of a served registry.
pub struct Console {
    client: SessionRegistryClient<Channel>,
    outbound: Outbound,
    pub tenant_id: Uuid,
    /// The member every call speaks for (`x-baton-member`), when set.
    member: Option<String>,
}

/// A pulse, with the fields most tests leave at their defaults.
pub struct Beat<'a> {
    pub session_id: &'a str,
    pub episode_id: Uuid,
    pub client: &'a str,
    pub host_id: &'a str,
    pub pid: u32,
    pub at: DateTime<Utc>,
    pub end_reason: Option<&'a str>,
    pub host_label: Option<&'a str>,
    pub client_version: Option<&'a str>,
}

impl<'a> Beat<'a> {
    pub fn new(session_id: &'a str, episode_id: Uuid, host_id: &'a str, at: DateTime<Utc>) -> Self {
        Beat {
            session_id,
            episode_id,
            client: "claude-code",
            host_id,
            pid: 4242,
            at,
            end_reason: None,
            host_label: None,
            client_version: None,
        }
    }
}

pub fn key(session_id: &str) -> proto::SessionKey {
    proto::SessionKey {
        agent: "claude-code".to_string(),
        session_id: session_id.to_string(),
    }
}

impl Console {
    /// Serves a registry on the harness's database and connects one tenant to it.
    pub async fn start(harness: &Harness) -> Console {
        let address = harness.serve(TOKEN, true).await;
        Console::connect(&address, Uuid::now_v7())
    }

    /// Another tenant on the same server.
    pub fn connect(address: &str, tenant_id: Uuid) -> Console {
        Console {
            client: SessionRegistryClient::new(baton_kit::grpc::channel(address).expect("channel")),
            outbound: Outbound::new(baton_kit::Secret::new(TOKEN.into())),
            tenant_id,
            member: None,
        }
    }

    pub async fn start_two(harness: &Harness) -> (Console, Console) {
        let address = harness.serve(TOKEN, true).await;
        (
            Console::connect(&address, Uuid::now_v7()),
            Console::connect(&address, Uuid::now_v7()),
        )
    }

    /// The same tenant's calls, speaking for `member` (raw: an invalid name goes out as is).
    pub fn as_member(&self, member: &str) -> Console {
        Console {
            client: self.client.clone(),
            outbound: self.outbound.clone(),
            tenant_id: self.tenant_id,
            member: Some(member.to_string()),
        }
    }

    fn request<T>(&self, at: DateTime<Utc>, message: T) -> tonic::Request<T> {
        let call = OutboundCall {
            tenant_id: self.tenant_id,
            test_now: Some(iso(at)),
        };
        let mut request = self.outbound.request(&call, message);
        if let Some(value) = self
            .member
            .as_deref()
            .and_then(|member| member.parse().ok())
        {
            request
                .metadata_mut()
                .insert(baton_kit::member::MEMBER_KEY, value);
        }
        request
    }

    /// Opens `session_id` as [`Console::open`] does, answering the status instead of failing.
    pub async fn try_open(&mut self, session_id: &str, at: DateTime<Utc>) -> Result<(), Status> {
        let request = self.request(
            at,
            proto::OpenRequest {
                key: Some(key(session_id)),
                source: proto::Source::Startup.into(),
                project: Some("baton".to_string()),
                ..Default::default()
            },
        );
        self.client.open(request).await.map(|_| ())
    }

    /// Opens `request` at `at`; answers the run id.
    pub async fn open_with(&mut self, request: proto::OpenRequest, at: DateTime<Utc>) -> String {
        let request = self.request(at, request);
        self.client
            .open(request)
            .await
            .expect("open")
            .into_inner()
            .session_run_id
    }

    /// Opens a claude-code session in project `baton` at `at`.
    pub async fn open(&mut self, session_id: &str, at: DateTime<Utc>) -> String {
        self.open_with(
            proto::OpenRequest {
                key: Some(key(session_id)),
                source: proto::Source::Startup.into(),
                project: Some("baton".to_string()),
                ..Default::default()
            },
            at,
        )
        .await
    }

    pub async fn heartbeat(&mut self, session_id: &str, at: DateTime<Utc>) {
        let request = self.request(
            at,
            proto::HeartbeatRequest {
                key: Some(key(session_id)),
                ..Default::default()
            },
        );
        self.client.heartbeat(request).await.expect("heartbeat");
    }

    pub async fn close(&mut self, session_id: &str, at: DateTime<Utc>) {
        let request = self.request(
            at,
            proto::CloseRequest {
                key: Some(key(session_id)),
                observed_at: None,
            },
        );
        self.client.close(request).await.expect("close");
    }

    /// Sends a pulse at `beat.at` (its request instant; `observed_at` only when `observed`).
    pub async fn try_pulse(
        &mut self,
        beat: &Beat<'_>,
        observed: Option<DateTime<Utc>>,
    ) -> Result<proto::PulseResponse, Status> {
        let request = self.request(
            beat.at,
            proto::PulseRequest {
                key: Some(key(beat.session_id)),
                episode_id: beat.episode_id.to_string(),
                client: beat.client.to_string(),
                client_version: beat.client_version.map(str::to_string),
                host_client: None,
                host_id: beat.host_id.to_string(),
                pid: beat.pid,
                observed_at: observed.map(to_timestamp),
                end_reason: beat.end_reason.map(str::to_string),
                host_label: beat.host_label.map(str::to_string),
            },
        );
        self.client
            .pulse(request)
            .await
            .map(tonic::Response::into_inner)
    }

    pub async fn pulse(&mut self, beat: &Beat<'_>) {
        self.try_pulse(beat, None).await.expect("pulse");
    }

    pub async fn liveness(&mut self, run_id: &str) -> proto::GetLivenessResponse {
        let request = self.request(
            now(),
            proto::GetLivenessRequest {
                session_run_id: run_id.to_string(),
            },
        );
        self.client
            .get_liveness(request)
            .await
            .expect("liveness")
            .into_inner()
    }

    pub async fn list_sessions(
        &mut self,
        request: proto::ListSessionsRequest,
    ) -> Result<proto::ListSessionsResponse, Status> {
        let request = self.request(now(), request);
        self.client
            .list_sessions(request)
            .await
            .map(tonic::Response::into_inner)
    }

    pub async fn find_sessions(
        &mut self,
        keys: Vec<proto::SessionKey>,
    ) -> Result<proto::FindSessionsResponse, Status> {
        let request = self.request(now(), proto::FindSessionsRequest { keys });
        self.client
            .find_sessions(request)
            .await
            .map(tonic::Response::into_inner)
    }

    pub async fn list_machines(
        &mut self,
        request: proto::ListMachinesRequest,
    ) -> Result<proto::ListMachinesResponse, Status> {
        let request = self.request(now(), request);
        self.client
            .list_machines(request)
            .await
            .map(tonic::Response::into_inner)
    }
}

/// The run ids of a page, in order.
pub fn run_ids(page: &proto::ListSessionsResponse) -> Vec<String> {
    page.sessions
        .iter()
        .map(|summary| {
            summary
                .session
                .as_ref()
                .expect("session")
                .session_run_id
                .clone()
        })
        .collect()
}
