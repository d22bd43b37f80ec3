//! The workflow definition: the same JSON a JS workflow's default export has, with export
//! names in place of functions.

use serde::Serialize;
use std::collections::BTreeMap;

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The definition a module declares with `define!`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Workflow {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topics: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub producers: BTreeMap<String, Producer>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub consumers: BTreeMap<String, Consumer>,
}

impl Workflow {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn topics(mut self, topics: &[&str]) -> Self {
        self.topics = strings(topics);
        self
    }
    pub fn producer(mut self, name: &str, p: Producer) -> Self {
        self.producers.insert(name.to_string(), p);
        self
    }
    pub fn consumer(mut self, name: &str, c: Consumer) -> Self {
        self.consumers.insert(name.to_string(), c);
        self
    }
}

/// When a producer runs: every `"5m"`, or on a cron expression.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Schedule {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub every: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cron: String,
}

/// A handler's error policy: strategy `fail` (the default), `retry` or `pause`; backoff
/// `fixed` (the default) or `exponential`.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OnError {
    pub strategy: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub max_retries: u32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub backoff: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub delay_ms: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl OnError {
    /// Retry up to `max_retries` times.
    pub fn retry(max_retries: u32) -> Self {
        OnError { strategy: "retry".into(), max_retries, ..Self::default() }
    }
    /// Pause the run for a person.
    pub fn pause() -> Self {
        OnError { strategy: "pause".into(), ..Self::default() }
    }
    pub fn backoff(mut self, backoff: &str, delay_ms: u32) -> Self {
        self.backoff = backoff.into();
        self.delay_ms = delay_ms;
        self
    }
}

/// A producer runs on a schedule and may publish. `handler`, `guard`, `before` and
/// `after` are export names.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Producer {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub publishes: Vec<String>,
    pub handler: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub guard: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub before: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub after: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnError>,
}

impl Producer {
    /// A producer whose handler is the export `handler`.
    pub fn new(handler: &str) -> Self {
        Producer { handler: handler.into(), ..Self::default() }
    }
    pub fn every(mut self, every: &str) -> Self {
        self.schedule = Some(Schedule { every: every.into(), ..Schedule::default() });
        self
    }
    pub fn cron(mut self, cron: &str) -> Self {
        self.schedule = Some(Schedule { cron: cron.into(), ..Schedule::default() });
        self
    }
    pub fn publishes(mut self, topics: &[&str]) -> Self {
        self.publishes = strings(topics);
        self
    }
    pub fn guard(mut self, export: &str) -> Self {
        self.guard = export.into();
        self
    }
    pub fn before(mut self, export: &str) -> Self {
        self.before = export.into();
        self
    }
    pub fn after(mut self, export: &str) -> Self {
        self.after = export.into();
        self
    }
    pub fn on_error(mut self, policy: OnError) -> Self {
        self.on_error = Some(policy);
        self
    }
}

/// A consumer handles events of the topics it subscribes to in three phases; the phase
/// and hook fields are export names.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Consumer {
    pub subscribe: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub publishes: Vec<String>,
    pub prepare: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mutate: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub next: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub guard: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub before: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub after: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnError>,
}

impl Consumer {
    /// A consumer of `topics` whose prepare phase is the export `prepare`.
    pub fn new(topics: &[&str], prepare: &str) -> Self {
        Consumer { subscribe: strings(topics), prepare: prepare.into(), ..Self::default() }
    }
    pub fn publishes(mut self, topics: &[&str]) -> Self {
        self.publishes = strings(topics);
        self
    }
    pub fn mutate(mut self, export: &str) -> Self {
        self.mutate = export.into();
        self
    }
    pub fn next(mut self, export: &str) -> Self {
        self.next = export.into();
        self
    }
    pub fn guard(mut self, export: &str) -> Self {
        self.guard = export.into();
        self
    }
    pub fn before(mut self, export: &str) -> Self {
        self.before = export.into();
        self
    }
    pub fn after(mut self, export: &str) -> Self {
        self.after = export.into();
        self
    }
    pub fn on_error(mut self, policy: OnError) -> Self {
        self.on_error = Some(policy);
        self
    }
}
