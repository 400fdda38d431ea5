//! The cache: a round trip, a corrupt file (an error naming it, then a new measurement), and a
//! changed key (a new file; the old one is not used).

use std::cell::Cell;
use tlblab_pathcost::cache::{cache_dir_from, read_cache, write_cache};
use tlblab_pathcost::steal::StealSample;
use tlblab_pathcost::{cached_or_measure_in, names, CacheKey, Measurement, Outcome, PathCosts};

const CPUINFO: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n\
                       model name\t: AMD EPYC\nstepping\t: 1\n\nprocessor\t: 1\nmodel name\t: other\n";

fn costs(key: &CacheKey, syscall_ns: f64) -> PathCosts {
    let m = Measurement::of(&[syscall_ns; 3], 3, 1000).unwrap();
    PathCosts {
        key: key.clone(),
        cpus: vec![0, 1],
        seconds: 0.5,
        results: [
            (names::NULL_SYSCALL.to_owned(), Outcome::Measured(m)),
            (names::MIGRATE.to_owned(), Outcome::Failed("needs 2 CPUs".into())),
        ]
        .into_iter()
        .collect(),
        // Cached with the costs, so a preset built from the cache is the same at every build.
        steal: Ok(StealSample { window_ms: 500, steal_ticks: 3, total_ticks: 100 }),
    }
}

#[test]
fn the_key_names_cpu_signature_kernel_and_code() {
    let key = CacheKey::from_parts(CPUINFO, "6.18.44");
    assert_eq!(key.cpu_model, "AMD EPYC");
    assert_eq!(key.signature, "family 26 model 2 stepping 1");
    assert_eq!(key.kernel_release, "6.18.44");
    assert!(key.code.ends_with(&format!("/{}", tlblab_pathcost::cache::CODE_VERSION)));
    assert!(key.file_name().starts_with("host-costs-") && key.file_name().ends_with(".json"));
    assert_eq!(key.digest(), CacheKey::from_parts(CPUINFO, "6.18.44").digest());
    assert_ne!(key.digest(), CacheKey::from_parts(CPUINFO, "6.18.45").digest());
    let d = cache_dir_from(Some("/x/cache".into()), Some("/home/u".into())).unwrap();
    assert_eq!(d, std::path::Path::new("/x/cache/tlblab"));
    let d = cache_dir_from(Some("relative".into()), Some("/home/u".into())).unwrap();
    assert_eq!(d, std::path::Path::new("/home/u/.cache/tlblab"));
    assert_eq!(cache_dir_from(None, None), None);
}

#[test]
fn round_trip_corrupt_file_and_key_change() {
    let dir = tempfile::tempdir().unwrap();
    let key = CacheKey::from_parts(CPUINFO, "6.18.44");
    let measured = Cell::new(0);
    let measure = |k: &CacheKey, ns: f64| {
        measured.set(measured.get() + 1);
        costs(k, ns)
    };

    // First: measured and written; second: read back, identical, not measured again.
    let first = cached_or_measure_in(Some(dir.path()), &key, || measure(&key, 100.0));
    assert!(!first.from_cache && first.notes.is_empty(), "{:?}", first.notes);
    let file = first.file.clone().unwrap();
    assert_eq!(file, dir.path().join(key.file_name()));
    let second = cached_or_measure_in(Some(dir.path()), &key, || measure(&key, 999.0));
    assert!(second.from_cache);
    assert_eq!(second.costs, first.costs);
    assert_eq!(measured.get(), 1);
    assert_eq!(read_cache(&file, &key).unwrap(), Some(first.costs.clone()));
    // No temporary file is left behind.
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1);

    // A corrupt file: an error naming it, then a new measurement that replaces it.
    std::fs::write(&file, "{ not json").unwrap();
    let err = read_cache(&file, &key).unwrap_err().to_string();
    assert!(err.contains(&file.display().to_string()) && err.contains("corrupt"), "{err}");
    let third = cached_or_measure_in(Some(dir.path()), &key, || measure(&key, 300.0));
    assert!(!third.from_cache);
    assert!(
        third.notes[0].contains("corrupt") && third.notes[0].contains(&file.display().to_string())
    );
    assert_eq!(third.costs.get(names::NULL_SYSCALL).unwrap().median_ns, 300.0);
    assert_eq!(read_cache(&file, &key).unwrap(), Some(third.costs.clone()));
    assert_eq!(measured.get(), 2);

    // Another kernel: another file, measured anew; a file whose key differs is not used.
    let other = CacheKey::from_parts(CPUINFO, "6.19.0");
    let fourth = cached_or_measure_in(Some(dir.path()), &other, || measure(&other, 400.0));
    assert!(!fourth.from_cache && fourth.file.as_ref() != Some(&file));
    assert_eq!(measured.get(), 3);
    assert_eq!(read_cache(&file, &other).unwrap(), None);
    write_cache(&file, &costs(&other, 1.0)).unwrap();
    let fifth = cached_or_measure_in(Some(dir.path()), &key, || measure(&key, 500.0));
    assert!(!fifth.from_cache);
    assert_eq!(fifth.costs.key, key);

    // No cache folder: measured, and the note says it is not kept.
    let none = cached_or_measure_in(None, &key, || measure(&key, 600.0));
    assert!(none.file.is_none() && none.notes[0].contains("not kept"));
}

/// `tlblab study`'s measurement: taken now even with a valid cache, and written over it, so
/// that the next cached read gets it.
#[test]
fn measuring_afresh_ignores_and_replaces_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let key = CacheKey::from_parts(CPUINFO, "6.18.44");
    let old = cached_or_measure_in(Some(dir.path()), &key, || costs(&key, 100.0));
    let fresh = tlblab_pathcost::measure_into(Some(dir.path()), || costs(&key, 250.0));
    assert!(!fresh.from_cache && fresh.notes[0].contains("afresh"), "{:?}", fresh.notes);
    assert_eq!(fresh.file, old.file);
    assert_eq!(fresh.costs.get(names::NULL_SYSCALL).unwrap().median_ns, 250.0);
    let again = cached_or_measure_in(Some(dir.path()), &key, || unreachable!("cached"));
    assert!(again.from_cache);
    assert_eq!(again.costs, fresh.costs);
}
