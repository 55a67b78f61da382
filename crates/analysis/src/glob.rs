//! Thread name patterns: a substring, or a glob when the pattern has `*` or `?`.

/// Matches thread names. A pattern without wildcards matches names that contain
/// it (`worker` matches `pool-1-worker-3`); with `*` (any run of characters) or
/// `?` (one character) it must match the whole name (`pool-*-worker-?`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadMatcher {
    Substring(String),
    Glob(Vec<char>),
}

impl ThreadMatcher {
    pub fn new(pattern: &str) -> ThreadMatcher {
        if pattern.contains(['*', '?']) {
            ThreadMatcher::Glob(pattern.chars().collect())
        } else {
            ThreadMatcher::Substring(pattern.to_string())
        }
    }

    pub fn matches(&self, name: &str) -> bool {
        match self {
            ThreadMatcher::Substring(s) => name.contains(s.as_str()),
            ThreadMatcher::Glob(p) => glob_match(p, &name.chars().collect::<Vec<_>>()),
        }
    }
}

/// Iterative wildcard matching with single backtracking point: on a mismatch,
/// the last `*` absorbs one more character. Linear enough for thread names.
fn glob_match(pattern: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    star = Some((sp, st + 1));
                    p = sp + 1;
                    t = st + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_pattern_matches_substrings() {
        let m = ThreadMatcher::new("worker");
        assert!(m.matches("pool-1-worker-3"));
        assert!(!m.matches("main"));
    }

    #[test]
    fn glob_must_match_the_whole_name() {
        let m = ThreadMatcher::new("pool-*-worker-?");
        assert!(m.matches("pool-1-worker-3"));
        assert!(m.matches("pool-12-worker-3"));
        assert!(!m.matches("pool-1-worker-33"));
        assert!(!m.matches("xpool-1-worker-3"));
    }

    #[test]
    fn star_alone_and_trailing_stars_match_everything() {
        assert!(ThreadMatcher::new("*").matches(""));
        assert!(ThreadMatcher::new("main**").matches("main"));
        assert!(ThreadMatcher::new("*a*b*").matches("xxaxxbxx"));
        assert!(!ThreadMatcher::new("*a*b*").matches("xxbxxaxx"));
    }
}
