//! How the benchmark reports: one JSON line per scenario as it finishes (for machines), and a
//! table of them all at the end (for people).

use serde_json::{Value, json};

/// One scenario's result on one backend.
pub struct Figure {
    pub scenario: &'static str,
    pub backend: String,
    /// The setup in a few words, for the table ("2 × 8 workers").
    pub setup: String,
    /// What was run (task counts, workers, processes).
    pub params: Value,
    /// What was measured, by name.
    pub figures: Vec<(&'static str, f64)>,
    /// The largest peak resident set of the processes that did the work.
    pub peak_rss_mib: f64,
}

/// Collects figures and prints each one as a JSON line when it arrives.
#[derive(Default)]
pub struct Report {
    figures: Vec<Figure>,
}

impl Report {
    pub fn add(&mut self, figure: Figure) {
        let figures: serde_json::Map<String, Value> = figure
            .figures
            .iter()
            .map(|(name, value)| ((*name).to_owned(), json!(round(*value))))
            .collect();
        let line = json!({
            "scenario": figure.scenario,
            "backend": figure.backend,
            "cores": cores(),
            "params": figure.params,
            "figures": figures,
            "peak_rss_mib": round(figure.peak_rss_mib),
        });
        println!("{line}");
        self.figures.push(figure);
    }

    /// The table of every figure so far.
    pub fn print_table(&self) {
        println!();
        println!(
            "{:<10} {:<10} {:<28} {:<26} {:>10} {:>8}",
            "scenario", "backend", "setup", "figure", "value", "RSS MiB"
        );
        for figure in &self.figures {
            for (name, value) in &figure.figures {
                println!(
                    "{:<10} {:<10} {:<28} {:<26} {:>10} {:>8.0}",
                    figure.scenario,
                    figure.backend,
                    figure.setup,
                    name,
                    format!("{:.1}", value),
                    figure.peak_rss_mib
                );
            }
        }
        println!("({} cores)", cores());
    }
}

/// Two decimals are plenty for rates and milliseconds.
fn round(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// The `q` quantile of sorted `values`.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted
        .get(((sorted.len().saturating_sub(1)) as f64 * q).round() as usize)
        .copied()
        .unwrap_or(f64::NAN)
}
