//! Reading one process's facts for [`crate::ancestry`].
//!
//! Linux reads `/proc/<pid>/stat` (parent, state, start time — field 22, clock ticks since
//! boot), `/proc/<pid>/exe` and `/proc/<pid>/cmdline`. Elsewhere (macOS, the BSDs) the portable
//! fallback asks `ps -o ppid=,stat=,lstart=,comm= -p <pid>` and `ps -o args= -p <pid>`: the
//! start is `lstart` (to the second, compared as text), the executable is `comm` (a full path
//! on macOS), and the argument vector is `args` split on spaces (which cannot tell a space in
//! an argument from a separator; it is only used to recognise a node-hosted CLI's script).

use crate::ancestry::ProcInfo;

/// The state, parent and start time in a `/proc/<pid>/stat` line, and the `comm` between its
/// parentheses (which may itself hold spaces and parentheses).
pub fn parse_stat(stat: &str) -> Option<(String, char, u32, String)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    // After the comm: field 3 (state), 4 (ppid), ... 22 (starttime).
    let fields: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let ppid = fields.get(1)?.parse().ok()?;
    let start = fields.get(19)?;
    start.parse::<u64>().ok()?;
    Some((comm, state, ppid, start.to_string()))
}

/// One `ps -o ppid=,stat=,lstart=,comm=` line: ppid, state, the five words of `lstart`
/// (`Tue Dec  1 11:32:15 2026`), then the command. (Linux reads `/proc` instead; the parser is
/// still built and tested there, so the fallback does not rot.)
#[cfg_attr(target_os = "linux", allow(dead_code))]
pub fn parse_ps(line: &str) -> Option<(u32, char, String, String)> {
    let mut words = line.split_whitespace();
    let ppid = words.next()?.parse().ok()?;
    let state = words.next()?.chars().next()?;
    let start: Vec<&str> = words.by_ref().take(5).collect();
    if start.len() != 5 {
        return None;
    }
    let comm: Vec<&str> = words.collect();
    if comm.is_empty() {
        return None;
    }
    Some((ppid, state, start.join(" "), comm.join(" ")))
}

fn exited(state: char) -> bool {
    matches!(state, 'Z' | 'X' | 'x')
}

/// The process `pid`, or `None` when it does not exist (or cannot be read).
#[cfg(target_os = "linux")]
pub fn read(pid: u32) -> Option<ProcInfo> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (comm, state, ppid, start) = parse_stat(&stat)?;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .map(|path| path.display().to_string());
    let argv = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            bytes
                .split(|byte| *byte == 0)
                .filter(|arg| !arg.is_empty())
                .map(|arg| String::from_utf8_lossy(arg).into_owned())
                .collect()
        })
        .unwrap_or_default();
    Some(ProcInfo {
        pid,
        ppid,
        comm,
        exe,
        argv,
        start,
        exited: exited(state),
    })
}

/// The portable fallback: `ps`.
#[cfg(not(target_os = "linux"))]
pub fn read(pid: u32) -> Option<ProcInfo> {
    let ps = |format: &str| {
        let output = std::process::Command::new("ps")
            .args(["-o", format, "-p", &pid.to_string()])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    let (ppid, state, start, comm) = parse_ps(&ps("ppid=,stat=,lstart=,comm=")?)?;
    let argv = ps("args=")
        .map(|args| args.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    let name = comm.rsplit('/').next().unwrap_or(&comm).to_string();
    Some(ProcInfo {
        pid,
        ppid,
        exe: comm.starts_with('/').then(|| comm.clone()),
        comm: name,
        argv,
        start,
        exited: exited(state),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines() {
        let stat = "4242 (my (odd) name) S 77 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 \
                    889123 1000 10 18446744073709551615";
        assert_eq!(
            parse_stat(stat),
            Some(("my (odd) name".to_string(), 'S', 77, "889123".to_string()))
        );
        assert_eq!(parse_stat("4242 (sh) Z 1"), None, "cut short");
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn ps_lines() {
        assert_eq!(
            parse_ps("  77 S    Tue Dec  1 11:32:15 2026     /usr/local/bin/codex"),
            Some((
                77,
                'S',
                "Tue Dec 1 11:32:15 2026".to_string(),
                "/usr/local/bin/codex".to_string()
            ))
        );
        assert_eq!(parse_ps("77 S Tue Dec 1"), None);
        assert_eq!(parse_ps(""), None);
    }

    #[test]
    fn this_process_reads_with_a_stable_start() {
        let me = read(std::process::id()).expect("this process");
        assert_eq!(me.ppid, std::os::unix::process::parent_id());
        assert!(!me.exited);
        assert_eq!(read(std::process::id()).expect("again").start, me.start);
        assert!(!me.argv.is_empty());
    }
}
