//! What an access outside an array does, in any build profile (the tests run this example
//! in release mode): a clean panic naming the type, the offset and the extent, on the host
//! and in a detour body alike; never a write outside the array.
//! `cargo run --release --example out_of_bounds`.

use parray::prelude::*;

parray! {
    pub paged float [16] SMALL;
    pub dmem int [4] FOUR;
    pub cuda(int* out) [2][32] OVERRUN;
}

/// The message of the panic of `f`, if it panics.
fn panic_message(f: impl FnOnce()) -> Option<String> {
    let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).err()?;
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
}

fn main() -> parray::Result<()> {
    std::panic::set_hook(Box::new(|_| {}));
    let mut b = SMALL::create()?;
    let host = panic_message(|| b[100_000_000] = 1.0);
    println!("b[100_000_000] = 1.0 on 16 floats: {host:?}");
    let typed = panic_message(|| b.set([16], 1.0));
    println!("b.set([16], 1.0): {typed:?}");
    let mut four = FOUR::create()?;
    let detour = detour!(OVERRUN(&mut four) {
        let i = $tid$;
        out[i] = 1;
    });
    match &detour {
        Ok(()) => println!("64 threads writing 4 ints: no error"),
        Err(e) => println!("64 threads writing 4 ints: {e}"),
    }
    let ok = host.as_deref()
        == Some("parray: offset 100000000 out of bounds for SMALL (extent 16)")
        && typed.as_deref() == Some("parray: index 16 is out of range for SMALL_0 (size 16)")
        && detour
            .as_ref()
            .is_err_and(|e| e.to_string().contains("out of bounds"))
        && four.to_vec()? == vec![1; 4];
    println!("check: {}", if ok { "ok" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
