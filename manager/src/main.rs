//! `libratory`: the user-facing command.
fn main() {
    println!("libratory {}", env!("CARGO_PKG_VERSION"));
}
