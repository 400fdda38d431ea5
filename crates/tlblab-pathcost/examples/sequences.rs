//! Prints the mitigation sequences' medians (ns per operation) over many runs.
use std::time::Instant;
use tlblab_pathcost::sequences;

fn main() {
    let ops = 2_000_000u64;
    for name in sequences::ALL {
        sequences::run(name, ops).unwrap();
        let mut v: Vec<f64> = (0..41)
            .map(|_| {
                let t = Instant::now();
                sequences::run(name, ops).unwrap();
                t.elapsed().as_nanos() as f64 / ops as f64
            })
            .collect();
        v.sort_by(f64::total_cmp);
        println!("{name:20} median {:.3} ns  p10 {:.3}  p90 {:.3}", v[20], v[4], v[36]);
    }
}
