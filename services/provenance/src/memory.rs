//! The vocabulary of memories and their events.

/// Generates a string enum with `as_str` and `parse` (the wire spelling is the SQL spelling).
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

string_enum!(
    /// What kind of atom a memory is.
    MemoryType {
        Decision => "decision",
        Commitment => "commitment",
        Blocker => "blocker",
        Fact => "fact",
        Preference => "preference",
        Pattern => "pattern",
        Note => "note",
        Event => "event",
    }
);

string_enum!(
    /// A memory row's own state.
    MemoryStatus {
        Open => "open",
        Archived => "archived",
        Superseded => "superseded",
    }
);

string_enum!(
    /// A commitment's lifecycle (CONTRACT section 10).
    CommitmentStatus {
        Open => "open",
        Waiting => "waiting",
        Resolved => "resolved",
        Expired => "expired",
    }
);

string_enum!(
    /// What an event records.
    EventKind {
        Create => "create",
        Revise => "revise",
        Supersede => "supersede",
        Resolve => "resolve",
        Unresolve => "unresolve",
        Archive => "archive",
        Import => "import",
        EmbedFailed => "embed_failed",
    }
);

string_enum!(
    /// Which transport made a write. Session provenance is payload, never an actor.
    ActorKind {
        UserDashboard => "user_dashboard",
        UserApi => "user_api",
        UserMcp => "user_mcp",
        Worker => "worker",
        Importer => "importer",
        System => "system",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::parse(kind.as_str()), Some(*kind));
        }
        for memory_type in MemoryType::ALL {
            assert_eq!(MemoryType::parse(memory_type.as_str()), Some(*memory_type));
        }
        assert_eq!(ActorKind::parse("capture_hook"), None);
        assert_eq!(MemoryType::parse("Decision"), None);
    }
}
