//! `stats`: the counters, `name value` per line.

use std::collections::BTreeMap;

/// The counters, by name. Which names there are is the module's to say (kmod/README.md);
/// a name this version does not know is kept, not refused.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats(BTreeMap<String, u64>);

impl Stats {
    /// Parses the file; the error is the first line that is not `name value`.
    pub fn parse(text: &str) -> Result<Self, String> {
        text.lines()
            .map(|line| {
                let (name, value) = line.split_once(' ').ok_or_else(|| line.to_owned())?;
                let value = value.parse().map_err(|_| line.to_owned())?;
                Ok((name.to_owned(), value))
            })
            .collect::<Result<_, _>>()
            .map(Stats)
    }

    /// Counter `name`; 0 when the module has no such counter.
    pub fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }

    /// Whether the module has counter `name`.
    pub fn has(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Every counter, by name.
    pub fn all(&self) -> &BTreeMap<String, u64> {
        &self.0
    }

    /// Every counter, by name, owned.
    pub fn into_map(self) -> BTreeMap<String, u64> {
        self.0
    }
}
