//! Components shared by several pages.

pub mod feedback;
pub mod scheduled_for;
pub mod throughput_chart;
pub mod top_bar;
