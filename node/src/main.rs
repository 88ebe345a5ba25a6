//! `libratory-node`: hosts emulated compute nodes.
fn main() {
    println!("libratory-node {}", env!("CARGO_PKG_VERSION"));
}
