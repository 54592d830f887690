//! Statistics for oscost, kept apart from measurement and reporting.
//!
//! Timing samples of operating-system costs are skewed and carry outliers from
//! interrupts, migrations and frequency changes, so the summaries here are
//! robust ones (median, MAD, percentiles, Tukey counts) with a bootstrap
//! confidence interval of the median rather than mean ± stddev alone.
//!
//! The crate is deliberately pure: no I/O, no clocks, no global state and no
//! hidden randomness. Every random choice comes from an explicitly seeded
//! [`oorandom::Rand64`], which uses integer arithmetic only, so the same
//! samples and seed give bit-identical intervals on every platform and every
//! run. That lets reports be reproduced and compared, and lets everything here
//! be tested on known data without a machine to measure.
//!
//! Functions that take raw samples assume finite values; the entry points that
//! summarise ([`summarize`], [`combine_medians`], [`bootstrap_ratio_ci`],
//! [`mann_whitney_p`]) check
//! for that and return `None` instead of a misleading figure.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod bootstrap;
pub mod cause;
pub mod fit;
mod mann_whitney;
mod median_law;
pub mod modes;
mod order;
mod outliers;
pub mod periodic;
pub mod sched;
pub mod share;
mod summary;

pub use bootstrap::{bootstrap_median_ci, bootstrap_ratio_ci, combine_medians, Combination};
pub use mann_whitney::{benjamini_hochberg, mann_whitney_p};
pub use median_law::{ratio_of_medians, MedianLaw};
pub use order::{median, percentile, percentile_ci95};
pub use outliers::{tukey_outliers, Outliers};
pub use summary::{half_medians, mad, summarize, summarize_with, Summary};

/// Above this CI half-width relative to |median| a result is flagged noisy:
/// beyond ±5% a figure is too unstable to compare runs or machines.
pub const NOISY_REL_HALF_WIDTH: f64 = 0.05;

/// Enough replicates that the 2.5th/97.5th percentiles of the bootstrap
/// distribution are stable to well under the CI width, while staying cheap.
pub const DEFAULT_RESAMPLES: usize = 2000;

/// Fixed so that reports are reproducible; its value has no meaning.
pub const DEFAULT_SEED: u64 = 0x0005_c057;

/// Confidence level of every `ci95` field.
pub const CONFIDENCE_95: f64 = 0.95;
