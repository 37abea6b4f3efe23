//! The static locality report of every suite kernel (forms, classes,
//! sharing, sectors per request, footprints, predicted rates, proposals and
//! the automatic family), at the test sizes on an 8-SM H100 model, pinned in
//! `tests/snapshots/access_report.txt`: a change to the access analysis, the
//! estimate or a kernel shows up there in review. After an intended change,
//! rewrite it with `BLESS=1 cargo test -p clustered-suite --test access_report`.

use std::path::Path;

use clustered_suite::access_report::{render, report};
use clustered_suite::sim::DeviceProfile;
use clustered_suite::suite::{self, Size};

#[test]
fn the_report_of_every_suite_kernel_matches_its_snapshot() {
    let profile = DeviceProfile::h100_sxm().scaled(8).unwrap();
    let mut text = String::new();
    let mut reported = 0;
    for workload in suite::all(Size::Test) {
        if let Some(r) = report(&workload, &profile, false).unwrap() {
            text.push_str(&render(&r));
            reported += 1;
        }
    }
    assert!(
        reported >= 20,
        "only {reported} kernels have an access analysis"
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/access_report.txt");
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; create it with BLESS=1", path.display()));
    if text != expected {
        let line = text
            .lines()
            .zip(expected.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| text.lines().count().min(expected.lines().count()));
        panic!(
            "the report differs from {} from line {}:\n  now:      {:?}\n  snapshot: {:?}\n\
             read the change; if it is intended, rewrite it with BLESS=1",
            path.display(),
            line + 1,
            text.lines().nth(line),
            expected.lines().nth(line)
        );
    }
}
