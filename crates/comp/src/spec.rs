//! [`AlgoSpec`]: an algorithm named the way every zmem command and the Python package take it,
//! parsed once at the edge and checked against the registry there, so an unknown name or a
//! parameter the algorithm does not take is refused before any work starts.
//!
//! One spelling, two forms:
//!
//! - `NAME` or `NAME:LEVEL` (`zstd`, `zstd:3`, `lz4:8`): the short form comp-bench always took;
//! - `NAME:KEY=VALUE,...` with the keys of zram's `algorithm_params` (`level`, `dict`,
//!   `deflate.winbits`, also spelled `winbits`): `zstd:level=3,dict=/etc/zram-dict`.
//!
//! A dictionary is read when the spec is parsed (an unreadable or empty file is refused then, as
//! the kernel's `algorithm_params` refuses it), and its path kept for the `algorithm_params`
//! line the spec turns back into ([`AlgoSpec::algorithm_params`]).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use crate::{CompError, Params, find};

/// An algorithm and its parameters, as given on a command line or in a keyword argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlgoSpec {
    /// The kernel's name (a registry entry).
    pub name: String,
    /// The parameters; the dictionary's content is loaded.
    pub params: Params,
    /// Where the dictionary came from, if there is one.
    pub dict_path: Option<PathBuf>,
}

impl AlgoSpec {
    /// `name` at its default parameters, checked against the registry.
    pub fn named(name: &str) -> Result<Self, CompError> {
        find(name)?;
        Ok(Self { name: name.to_string(), params: Params::default(), dict_path: None })
    }

    /// Parses `spec` (either form of the module documentation).
    pub fn parse(spec: &str) -> Result<Self, CompError> {
        spec.parse()
    }

    /// Every algorithm of the registry at its default parameters.
    pub fn all() -> Vec<Self> {
        crate::algorithms()
            .iter()
            .map(|a| Self { name: a.name.to_string(), params: Params::default(), dict_path: None })
            .collect()
    }

    /// How tables name this spec: `zstd`, `zstd:9` when only a level was given, else the
    /// long form.
    pub fn label(&self) -> String {
        self.to_string()
    }

    /// The parameters as zram's `algorithm_params` takes them after `algo=NAME`
    /// (`level=3 dict=/path`), or `None` when every parameter is the default.
    pub fn algorithm_params(&self) -> Option<String> {
        let parts = self.parts("deflate.winbits");
        (!parts.is_empty()).then(|| parts.join(" "))
    }

    /// The parameters that are set, as `KEY=VALUE` (`winbits` spelled as the caller's form
    /// wants it).
    fn parts(&self, winbits: &str) -> Vec<String> {
        let mut parts = Vec::new();
        if let Some(l) = self.params.level {
            parts.push(format!("level={l}"));
        }
        if let Some(p) = &self.dict_path {
            parts.push(format!("dict={}", p.display()));
        }
        if let Some(w) = self.params.deflate_winbits {
            parts.push(format!("{winbits}={w}"));
        }
        parts
    }
}

impl fmt::Display for AlgoSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.params.level, &self.dict_path, self.params.deflate_winbits) {
            (None, None, None) => write!(f, "{}", self.name),
            (Some(l), None, None) => write!(f, "{}:{l}", self.name),
            _ => {
                let parts = self.parts("winbits");
                write!(f, "{}:{}", self.name, parts.join(","))
            }
        }
    }
}

impl FromStr for AlgoSpec {
    type Err = CompError;

    fn from_str(spec: &str) -> Result<Self, CompError> {
        let (name, rest) = match spec.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (spec, None),
        };
        let algo = find(name)?;
        let bad = |msg: String| CompError::InvalidParam { algo: algo.name, msg };
        let mut out =
            Self { name: algo.name.to_string(), params: Params::default(), dict_path: None };
        let Some(rest) = rest else { return Ok(out) };
        if rest.is_empty() {
            return Err(bad(format!("{spec:?}: nothing after ':' (give a level or KEY=VALUE)")));
        }
        let level = |text: &str| -> Result<i32, CompError> {
            text.parse().map_err(|_| bad(format!("level {text:?} is not an integer")))
        };
        if !rest.contains('=') {
            out.params.level = Some(level(rest)?);
        } else {
            for item in rest.split(',') {
                let (key, value) = item
                    .split_once('=')
                    .ok_or_else(|| bad(format!("{item:?} is not KEY=VALUE")))?;
                match key {
                    "level" => out.params.level = Some(level(value)?),
                    "winbits" | "deflate.winbits" => {
                        out.params.deflate_winbits =
                            Some(value.parse().map_err(|_| {
                                bad(format!("winbits {value:?} is not an integer"))
                            })?);
                    }
                    "dict" => {
                        let data =
                            std::fs::read(value).map_err(|e| bad(format!("dict {value}: {e}")))?;
                        if data.is_empty() {
                            return Err(bad(format!("dict {value}: the file is empty")));
                        }
                        out.params.dict = Some(Arc::from(data));
                        out.dict_path = Some(PathBuf::from(value));
                    }
                    other => {
                        return Err(bad(format!(
                            "unknown parameter {other:?} (level, dict, winbits)"
                        )));
                    }
                }
            }
        }
        if let Some(l) = out.params.level {
            match algo.levels {
                None => return Err(bad("takes no level".into())),
                Some((lo, hi)) if !(lo..=hi).contains(&l) => {
                    return Err(bad(format!("level {l} out of range {lo}..={hi}")));
                }
                Some(_) => {}
            }
        }
        if out.params.dict.is_some() && !algo.takes_dict {
            return Err(bad("takes no dictionary".into()));
        }
        if out.params.deflate_winbits.is_some() && !algo.takes_winbits {
            return Err(bad("takes no winbits (only deflate does)".into()));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_forms_are_the_same_spec() {
        let a: AlgoSpec = "zstd:3".parse().unwrap();
        let b: AlgoSpec = "zstd:level=3".parse().unwrap();
        assert_eq!(a, b);
        assert_eq!(a.params.level, Some(3));
        assert_eq!(a.to_string(), "zstd:3");
        assert_eq!(a.algorithm_params().as_deref(), Some("level=3"));
        let plain: AlgoSpec = "lzo-rle".parse().unwrap();
        assert_eq!((plain.to_string(), plain.algorithm_params()), ("lzo-rle".into(), None));
    }

    #[test]
    fn a_dictionary_is_read_at_parse_time_and_kept_by_path() {
        let dir = std::env::temp_dir().join(format!("zmem-spec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("d");
        std::fs::write(&f, b"dictionary bytes").unwrap();
        let s: AlgoSpec = format!("zstd:level=3,dict={}", f.display()).parse().unwrap();
        assert_eq!(s.params.dict.as_deref(), Some(&b"dictionary bytes"[..]));
        assert_eq!(s.algorithm_params(), Some(format!("level=3 dict={}", f.display())));
        let round: AlgoSpec = s.to_string().parse().unwrap();
        assert_eq!(round, s);
        std::fs::write(&f, b"").unwrap();
        let e = format!("zstd:dict={}", f.display()).parse::<AlgoSpec>().unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unknown_names_and_parameters_are_refused_at_parse_time() {
        for (spec, want) in [
            ("foo", "unknown compression algorithm 'foo'"),
            ("zstd:99", "out of range"),
            ("zstd:x", "not an integer"),
            ("lzo:1", "takes no level"),
            ("lzo:dict=/nonexistent", "dict /nonexistent"),
            ("zstd:speed=1", "unknown parameter"),
            ("lz4:winbits=-12", "only deflate"),
            ("zstd:", "nothing after"),
        ] {
            let e = spec.parse::<AlgoSpec>().unwrap_err().to_string();
            assert!(e.contains(want), "{spec}: {e}");
        }
        let d: AlgoSpec = "deflate:winbits=-12".parse().unwrap();
        assert_eq!(d.params.deflate_winbits, Some(-12));
        assert_eq!(d.algorithm_params().as_deref(), Some("deflate.winbits=-12"));
    }
}
