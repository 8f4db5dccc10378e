//! Components shared by several pages.

pub mod throughput_chart;
pub mod top_bar;
