//! One part of a console page fed by one service call ([`Section`]): what it shows, or the
//! line saying which service did not answer. A page with several parts renders whatever parts
//! it has; one failed read empties its own part, never the page.

use tonic::{Response, Status};

use baton_kit::error::ErrorCode;

/// A part of a page: its value (empty when the read failed) and, when it failed, why.
#[derive(Debug, Default)]
pub struct Section<T> {
    pub value: T,
    pub error: Option<String>,
}

impl<T: Default> Section<T> {
    /// `answer` shown through `show`; a failed call leaves the part empty with a line naming
    /// `service` (the code is logged, the message is not: it may quote the caller's input).
    pub fn fetched<R>(
        service: &str,
        answer: Result<Response<R>, Status>,
        show: impl FnOnce(R) -> T,
    ) -> Section<T> {
        match answer {
            Ok(answer) => Section {
                value: show(answer.into_inner()),
                error: None,
            },
            Err(status) => Section::failed(service, &status),
        }
    }

    /// Like [`Section::fetched`], with not found read as nothing to show (a session that has
    /// no usage uploaded yet has no tree, and that is no failure).
    pub fn fetched_or_empty<R>(
        service: &str,
        answer: Result<Response<R>, Status>,
        show: impl FnOnce(R) -> T,
    ) -> Section<T> {
        match answer {
            Err(status) if ErrorCode::from_status(&status) == ErrorCode::NotFound => {
                Section::default()
            }
            answer => Section::fetched(service, answer, show),
        }
    }

    /// The part for a call that failed with `status`.
    pub fn failed(service: &str, status: &Status) -> Section<T> {
        Section {
            value: T::default(),
            error: Some(unavailable(service, status)),
        }
    }
}

impl<T> Section<Vec<T>> {
    /// Whether the part read fine and has nothing in it (the template's "none yet" line).
    pub fn is_empty(&self) -> bool {
        self.error.is_none() && self.value.is_empty()
    }
}

/// The line a part shows when `service` did not answer; the code goes to the log.
pub(crate) fn unavailable(service: &str, status: &Status) -> String {
    tracing::warn!(service, code = ?status.code(), "console: a page part's read failed");
    format!("The {service} service did not answer; reload in a moment.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_answer_becomes_its_part() {
        let ok: Section<Vec<u8>> = Section::fetched("usage", Ok(Response::new(3u8)), |n| vec![n]);
        assert_eq!((ok.value, ok.error), (vec![3], None));

        let failed: Section<Vec<u8>> =
            Section::fetched("usage", Err(Status::unavailable("down")), |n: u8| vec![n]);
        assert!(failed.value.is_empty());
        assert_eq!(
            failed.error.as_deref(),
            Some("The usage service did not answer; reload in a moment.")
        );
        assert!(!failed.is_empty(), "a failed part is not an empty one");

        let missing: Section<Vec<u8>> =
            Section::fetched_or_empty("usage", Err(Status::not_found("none")), |n: u8| vec![n]);
        assert_eq!(missing.error, None);
        assert!(missing.is_empty());

        let strict: Section<Vec<u8>> =
            Section::fetched("usage", Err(Status::not_found("none")), |n: u8| vec![n]);
        assert!(
            strict.error.is_some(),
            "not found is a failure where a part must exist"
        );
    }
}
