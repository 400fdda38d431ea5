//! Read-only views of the inputs whose producers have no `Deserialize` types: just the fields
//! the report shows. Bench results and trace reports are read with their own crates' types.

pub mod replay;
pub mod study;
pub mod sweep_dir;
