//! Components shared by several pages.

pub mod bell;
pub mod feedback;
pub mod pace;
pub mod reschedule;
pub mod scheduled_for;
pub mod task_acts;
pub mod throughput_chart;
pub mod top_bar;
