//! The latency histogram of commands, observed by `command::dispatch` as
//! each command finishes and exposed by `/metrics` (`metrics.rs`).

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CommandLabel {
    command: String,
}

/// Command latencies, observed as commands finish.
#[derive(Clone)]
pub struct Latencies {
    commands: Family<CommandLabel, Histogram, fn() -> Histogram>,
}

/// 50 µs to about 26 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 2.0, 20))
}

impl Default for Latencies {
    fn default() -> Self {
        let commands = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        Latencies { commands }
    }
}

impl Latencies {
    /// Records one command's time. `command` must be a name from the
    /// command table (the caller passes `unknown` otherwise), so a client
    /// cannot grow the label set.
    pub fn observe(&self, command: &str, elapsed: Duration) {
        let command = command.to_owned();
        self.commands
            .get_or_create(&CommandLabel { command })
            .observe(elapsed.as_secs_f64());
    }

    /// The histogram family, for registering in a scrape.
    pub fn family(&self) -> Family<CommandLabel, Histogram, fn() -> Histogram> {
        self.commands.clone()
    }
}
