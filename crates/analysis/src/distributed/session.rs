//! The session file of `jscope merge` (docs/DISTRIBUTED.md, "The session file"):
//! which recordings, how their calls were matched and the clock offsets found.
//! JSON, version 1; member paths are relative to the session file's directory when
//! the recordings lie below it, so a session and its recordings can move together.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::{CallRef, ClockOffset, DistributedTree, Match, Member, MemberSource};

/// The session format's version this library reads and writes.
pub const SESSION_VERSION: u32 = 1;

/// A session file's contents. Field order is the file's key order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// [`SESSION_VERSION`].
    pub jscope_session: u32,
    /// The JVM whose clock the offsets are relative to.
    pub reference: usize,
    pub members: Vec<SessionMember>,
    /// The match table.
    pub matches: Vec<SessionMatch>,
    /// `[JVM index, index among that JVM's remote-call records]`.
    pub unmatched_clients: Vec<[usize; 2]>,
    pub unmatched_servers: Vec<[usize; 2]>,
}

/// One JVM of a session: where its recording is, and what was found of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMember {
    /// A recording file, or
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// a collector's data directory and the JVM's stream id in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jvm: Option<String>,
    pub host: String,
    pub pid: u32,
    pub command_line: String,
    pub remote_calls: usize,
    /// Add to this JVM's clock to get the reference's; absent when not linked.
    pub offset_ns: Option<i64>,
    pub uncertainty_ns: Option<u64>,
}

impl SessionMember {
    fn of(m: &Member, source: &MemberSource, offset: Option<ClockOffset>, dir: &Path) -> Self {
        let (path, data, jvm) = match source {
            MemberSource::File(p) => (Some(relative_to(p, dir)), None, None),
            MemberSource::Data { dir: d, jvm } => {
                (None, Some(relative_to(d, dir)), Some(jvm.clone()))
            }
        };
        SessionMember {
            path,
            data,
            jvm,
            host: m.host.clone(),
            pid: m.pid,
            command_line: m.command_line.clone(),
            remote_calls: m.remotes.len(),
            offset_ns: offset.map(|o| o.offset_ns),
            uncertainty_ns: offset.map(|o| o.uncertainty_ns),
        }
    }
}

/// A matched remote call of the match table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMatch {
    /// [JVM index, index among that JVM's remote-call records].
    pub client: [usize; 2],
    pub server: [usize; 2],
    pub network_ns: u64,
}

/// Why a session file cannot be written, read or used. Each names the file.
#[derive(Debug, Error)]
pub enum SessionError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Not JSON, or not a session's shape.
    #[error("{} is not a jscope session file", path.display())]
    NotASession {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}: session version {found} (this jscope reads {SESSION_VERSION})", path.display())]
    Version { path: PathBuf, found: u32 },
    #[error("{}: a member needs either \"path\" or \"data\" and \"jvm\"", path.display())]
    BadMember { path: PathBuf, index: usize },
    #[error("{}: the match table does not fit its recordings", path.display())]
    MatchTable {
        path: PathBuf,
        #[source]
        source: NoSuchCall,
    },
}

/// A match table entry that names a remote call its recordings do not have.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("no remote call {call} in JVM {jvm}")]
pub struct NoSuchCall {
    pub jvm: usize,
    pub call: usize,
}

impl Session {
    /// The session of a merged tree whose members were read from `sources` (in
    /// the same order); paths are stored relative to `dir`, the directory of the
    /// session file, when they lie below it.
    pub fn of(tree: &DistributedTree, sources: &[MemberSource], dir: &Path) -> Session {
        let pair = |c: CallRef| [c.jvm, c.call];
        Session {
            jscope_session: SESSION_VERSION,
            reference: tree.reference,
            members: tree
                .members
                .iter()
                .zip(sources)
                .zip(&tree.offsets)
                .map(|((m, source), offset)| SessionMember::of(m, source, *offset, dir))
                .collect(),
            matches: tree
                .links
                .iter()
                .map(|l| SessionMatch {
                    client: pair(l.client),
                    server: pair(l.server),
                    network_ns: l.network_ns,
                })
                .collect(),
            unmatched_clients: tree.unmatched_clients.iter().map(|&c| pair(c)).collect(),
            unmatched_servers: tree.unmatched_servers.iter().map(|&c| pair(c)).collect(),
        }
    }

    /// The file's text: pretty-printed JSON and a newline.
    pub fn to_text(&self) -> String {
        serde_json::to_string_pretty(self).expect("a session serialises") + "\n"
    }

    /// Writes the session file.
    pub fn write(&self, path: &Path) -> Result<(), SessionError> {
        std::fs::write(path, self.to_text()).map_err(|source| SessionError::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    /// A session from a session file's text (`path` names it in errors); another
    /// version is refused.
    pub fn parse(text: &str, path: &Path) -> Result<Session, SessionError> {
        let session: Session =
            serde_json::from_str(text).map_err(|source| SessionError::NotASession {
                path: path.to_path_buf(),
                source,
            })?;
        if session.jscope_session != SESSION_VERSION {
            return Err(SessionError::Version {
                path: path.to_path_buf(),
                found: session.jscope_session,
            });
        }
        Ok(session)
    }

    /// Reads a session file.
    pub fn read(path: &Path) -> Result<Session, SessionError> {
        let text = std::fs::read_to_string(path).map_err(|source| SessionError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Where the members' recordings are; relative paths are taken from the
    /// directory of `path`, the session file.
    pub fn sources(&self, path: &Path) -> Result<Vec<MemberSource>, SessionError> {
        let dir = dir_or_cwd(path.parent().unwrap_or(Path::new("")));
        self.members
            .iter()
            .enumerate()
            .map(|(index, m)| match (&m.path, &m.data, &m.jvm) {
                (Some(p), None, None) => Ok(MemberSource::File(dir.join(p))),
                (None, Some(d), Some(id)) => Ok(MemberSource::Data {
                    dir: dir.join(d),
                    jvm: id.clone(),
                }),
                _ => Err(SessionError::BadMember {
                    path: path.to_path_buf(),
                    index,
                }),
            })
            .collect()
    }

    /// The match table, checked against the members loaded from
    /// [`sources`](Session::sources): every call it names must exist.
    pub fn checked_matches(&self, members: &[Member]) -> Result<Vec<Match>, NoSuchCall> {
        let call = |[jvm, call]: [usize; 2]| match members.get(jvm) {
            Some(member) if call < member.remotes.len() => Ok(CallRef { jvm, call }),
            _ => Err(NoSuchCall { jvm, call }),
        };
        self.matches
            .iter()
            .map(|m| {
                Ok(Match {
                    client: call(m.client)?,
                    server: call(m.server)?,
                })
            })
            .collect()
    }

    /// Reads a session file, loads its members with `load` (e.g. through
    /// [`load_members`](super::load_members)) and checks the match table against
    /// them: what [`DistributedTree::with_matches`] takes.
    pub fn open<E, F>(path: &Path, load: F) -> Result<(Vec<Member>, Vec<Match>), E>
    where
        E: From<SessionError>,
        F: FnOnce(&[MemberSource]) -> Result<Vec<Member>, E>,
    {
        let session = Self::read(path)?;
        let members = load(&session.sources(path)?)?;
        let matches =
            session
                .checked_matches(&members)
                .map_err(|source| SessionError::MatchTable {
                    path: path.to_path_buf(),
                    source,
                })?;
        Ok((members, matches))
    }
}

/// Whether a file is a session: a session starts with `{`, a recording with the
/// format's magic.
pub fn is_session(path: &Path) -> io::Result<bool> {
    let mut head = [0u8; 1];
    let n = std::fs::File::open(path)?.read(&mut head)?;
    Ok(n == 1 && head[0] == b'{')
}

/// A recording's path as the session stores it: relative to the session's
/// directory when below it, so a session and its recordings can move together.
fn relative_to(path: &Path, dir: &Path) -> PathBuf {
    let (Ok(p), Ok(d)) = (path.canonicalize(), dir_or_cwd(dir).canonicalize()) else {
        return path.to_path_buf();
    };
    p.strip_prefix(&d).map(Path::to_path_buf).unwrap_or(p)
}

fn dir_or_cwd(dir: &Path) -> &Path {
    if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }
}
