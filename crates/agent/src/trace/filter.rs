//! Which methods are traced: JPMT-style include/exclude rules with `*` wildcards
//! (first match wins, no match means not traced), JaViz's `exclude-library` and a
//! class list that also selects subclasses.
//!
//! Pure code: parsed from the `trace=` option or a `traceconfig=` file and
//! unit-tested here without a JVM.

/// A problem in the trace filters; Display is the agent's one stderr line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("trace config line {line}: {message}")]
    Line { line: usize, message: String },
    #[error("cannot read trace config {path}: {message}")]
    Read { path: String, message: String },
    #[error("empty trace pattern")]
    EmptyPattern,
}

/// A `*` wildcard pattern over dotted class names or method names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob(String);

impl Glob {
    pub fn new(pattern: &str) -> Glob {
        Glob(pattern.replace('/', "."))
    }

    /// True when the pattern is `*` alone (matches everything).
    pub fn is_any(&self) -> bool {
        self.0 == "*"
    }

    pub fn matches(&self, text: &str) -> bool {
        glob_match(self.0.as_bytes(), text.as_bytes())
    }
}

/// Iterative wildcard match with backtracking to the last `*` only: linear in
/// practice and never recursive.
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// One filter rule; rules are tried in order and the first that matches decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    Include {
        class: Glob,
        method: Glob,
    },
    Exclude {
        class: Glob,
        method: Glob,
    },
    /// The class (dotted name, exact) or any class that extends or implements it.
    Subclasses {
        class: String,
        method: Glob,
    },
}

/// The whole filter configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filters {
    pub rules: Vec<Rule>,
    /// JaViz: a library method is traced only when traced application code calls it
    /// directly; deeper library calls are counted as untraced.
    pub exclude_library: bool,
    /// JPMT's untraced-call counter: in classes matching these, every method the
    /// rules do not trace gets a count-only probe.
    pub count_untraced: Vec<Glob>,
}

/// Dotted-name prefixes of the Java platform's own classes (the "library" of
/// `exclude-library`).
pub const LIBRARY_PREFIXES: [&str; 6] = ["java.", "javax.", "jdk.", "sun.", "com.sun.", "org.xml."];

pub fn is_library(dotted_class: &str) -> bool {
    LIBRARY_PREFIXES.iter().any(|p| dotted_class.starts_with(p))
}

impl Filters {
    /// Parses the `trace=` option value: `;`-separated `CLASS[#METHOD]` patterns,
    /// each an include rule, or an exclude rule when it starts with `!`.
    pub fn parse_option(text: &str) -> Result<Filters, FilterError> {
        let mut filters = Filters::default();
        for item in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let (exclude, item) = match item.strip_prefix('!') {
                Some(rest) => (true, rest.trim()),
                None => (false, item),
            };
            let (class, method) = item.split_once('#').unwrap_or((item, "*"));
            if class.is_empty() || method.is_empty() {
                return Err(FilterError::EmptyPattern);
            }
            filters.rules.push(rule(exclude, class, method));
        }
        if filters.rules.is_empty() {
            return Err(FilterError::EmptyPattern);
        }
        Ok(filters)
    }

    /// Parses a JPMT-style config file's text (see [`Filters::apply_line`]).
    pub fn parse_config(text: &str) -> Result<Filters, FilterError> {
        let mut filters = Filters::default();
        for (n, line) in text.lines().enumerate() {
            filters
                .apply_line(line)
                .map_err(|message| FilterError::Line {
                    line: n + 1,
                    message,
                })?;
        }
        Ok(filters)
    }

    pub fn read_config(path: &str) -> Result<Filters, FilterError> {
        let text = std::fs::read_to_string(path).map_err(|e| FilterError::Read {
            path: path.to_string(),
            message: e.to_string(),
        })?;
        Filters::parse_config(&text)
    }

    /// One config line: `include CLASS METHOD`, `exclude CLASS METHOD` (JPMT's
    /// `includemethod`/`excludemethod` too), `exclude-library`, `subclasses-of
    /// CLASS [METHOD]`; `#` starts a comment.
    fn apply_line(&mut self, line: &str) -> Result<(), String> {
        let line = line.split('#').next().unwrap_or("").trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            ["include" | "includemethod", c, m] => self.rules.push(rule(false, c, m)),
            ["exclude" | "excludemethod", c, m] => self.rules.push(rule(true, c, m)),
            ["exclude-library"] => self.exclude_library = true,
            ["count-untraced"] => self.count_untraced.push(Glob::new("*")),
            ["count-untraced", c] => self.count_untraced.push(Glob::new(c)),
            ["subclasses-of", c] => self.rules.push(subclasses(c, "*")),
            ["subclasses-of", c, m] => self.rules.push(subclasses(c, m)),
            [word, ..] => return Err(format!("cannot read `{line}` (`{word}`: expected include CLASS METHOD, exclude CLASS METHOD, exclude-library, count-untraced [CLASS] or subclasses-of CLASS [METHOD])")),
        }
        Ok(())
    }

    /// Adds `other`'s rules after this one's (the option's patterns come after
    /// the config file's).
    pub fn extend(&mut self, other: Filters) {
        self.rules.extend(other.rules);
        self.exclude_library |= other.exclude_library;
        self.count_untraced.extend(other.count_untraced);
    }

    /// Whether the untraced methods of `class` (dotted) get count-only probes.
    pub fn counts_class(&self, class: &str) -> bool {
        self.count_untraced.iter().any(|g| g.matches(class))
    }

    /// Whether any method of `class` (dotted) may be traced: a cheap test before a
    /// class is parsed. `extends` tells whether the class descends from a name.
    pub fn may_trace_class(&self, class: &str, extends: &dyn Fn(&str) -> bool) -> bool {
        for r in &self.rules {
            match r {
                Rule::Include { class: c, .. } if c.matches(class) => return true,
                Rule::Exclude { class: c, method } if method.is_any() && c.matches(class) => {
                    return false
                }
                Rule::Subclasses { class: c, .. } if c == class || extends(c) => return true,
                _ => {}
            }
        }
        false
    }

    /// Whether `class.method` (dotted class) is traced: the first matching rule decides.
    pub fn traces(&self, class: &str, method: &str, extends: &dyn Fn(&str) -> bool) -> bool {
        for r in &self.rules {
            match r {
                Rule::Include {
                    class: c,
                    method: m,
                } if c.matches(class) && m.matches(method) => return true,
                Rule::Exclude {
                    class: c,
                    method: m,
                } if c.matches(class) && m.matches(method) => return false,
                Rule::Subclasses {
                    class: c,
                    method: m,
                } if m.matches(method) && (c == class || extends(c)) => return true,
                _ => {}
            }
        }
        false
    }

    /// The base classes named by `subclasses-of` rules.
    pub fn subclass_roots(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().filter_map(|r| match r {
            Rule::Subclasses { class, .. } => Some(class.as_str()),
            _ => None,
        })
    }
}

fn rule(exclude: bool, class: &str, method: &str) -> Rule {
    let (class, method) = (Glob::new(class), Glob::new(method));
    if exclude {
        Rule::Exclude { class, method }
    } else {
        Rule::Include { class, method }
    }
}

fn subclasses(class: &str, method: &str) -> Rule {
    Rule::Subclasses {
        class: class.replace('/', "."),
        method: Glob::new(method),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> bool {
        false
    }

    #[test]
    fn globs_match_wildcards_anywhere() {
        let g = Glob::new("com.acme.*");
        assert!(g.matches("com.acme.Shop"));
        assert!(g.matches("com.acme.deep.Inner$1"));
        assert!(!g.matches("com.acmex.Shop"));
        assert!(Glob::new("*").matches(""));
        assert!(Glob::new("get*Name").matches("getFullName"));
        assert!(Glob::new("*a*b*").matches("xxaxxbxx"));
        assert!(!Glob::new("*a*b").matches("xxaxxbxx"));
        assert!(Glob::new("java/util/*").matches("java.util.List"));
    }

    #[test]
    fn first_matching_rule_wins_and_no_match_means_untraced() {
        let f = Filters::parse_config(
            "# JPMT example\nexcludemethod * <init>\nexclude * main\ninclude demo.* *\nexclude * *\n",
        )
        .unwrap();
        assert!(f.traces("demo.Shop", "buy", &none));
        assert!(!f.traces("demo.Shop", "<init>", &none));
        assert!(!f.traces("demo.Shop", "main", &none));
        assert!(!f.traces("other.Thing", "run", &none));
        let f = Filters::parse_config("include demo.Shop *").unwrap();
        assert!(!f.traces("demo.Other", "x", &none), "no rule matched");
    }

    #[test]
    fn option_patterns_include_and_bang_excludes() {
        let f = Filters::parse_option("demo.*#get*; !demo.Secret ;java.util.ArrayList").unwrap();
        assert!(f.traces("demo.Shop", "getPrice", &none));
        assert!(!f.traces("demo.Shop", "buy", &none));
        assert!(f.traces("java.util.ArrayList", "add", &none));
        let f = Filters::parse_option("!demo.Secret;demo.*").unwrap();
        assert!(!f.traces("demo.Secret", "get", &none));
        assert!(!f.may_trace_class("demo.Secret", &none));
        assert!(f.traces("demo.Open", "get", &none));
        assert_eq!(Filters::parse_option(" ; "), Err(FilterError::EmptyPattern));
        assert_eq!(Filters::parse_option("a#"), Err(FilterError::EmptyPattern));
    }

    #[test]
    fn subclasses_of_selects_the_class_and_its_descendants() {
        let f = Filters::parse_config("subclasses-of demo.Base run*\n").unwrap();
        let extends_base = |c: &str| c == "demo.Base";
        assert!(f.traces("demo.Base", "run", &none));
        assert!(f.traces("demo.Impl", "runFast", &extends_base));
        assert!(!f.traces("demo.Impl", "stop", &extends_base));
        assert!(!f.traces("demo.Other", "run", &none));
        assert!(f.may_trace_class("demo.Impl", &extends_base));
        assert_eq!(f.subclass_roots().collect::<Vec<_>>(), ["demo.Base"]);
    }

    #[test]
    fn count_untraced_names_the_classes_it_counts_in() {
        let f = Filters::parse_config("count-untraced demo.*\ninclude demo.Shop buy").unwrap();
        assert!(f.counts_class("demo.Shop") && !f.counts_class("java.util.List"));
        let all = Filters::parse_config("count-untraced").unwrap();
        assert!(all.counts_class("java.util.List"));
    }

    #[test]
    fn exclude_library_and_bad_lines() {
        let f = Filters::parse_config("exclude-library\ninclude * *").unwrap();
        assert!(f.exclude_library);
        assert!(is_library("java.util.HashMap") && !is_library("demo.javaish.X"));
        let err = Filters::parse_config("include a b\ninclude a\n").unwrap_err();
        assert!(err
            .to_string()
            .starts_with("trace config line 2: cannot read `include a`"));
    }
}
