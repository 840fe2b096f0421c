//! The read-only tools. Everything a tool may touch goes through [`workspace::Workspace`].

pub mod workspace;
