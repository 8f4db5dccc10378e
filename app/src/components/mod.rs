//! Components shared by several pages.

pub mod top_bar;
