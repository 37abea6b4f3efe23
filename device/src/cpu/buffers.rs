//! The global memory of a checked CPU run: the host slices passed for the
//! kernel's pointer parameters, and the scheduler's scratch words.

use std::fmt;

use super::AccessKind;

/// One buffer a run may touch.
#[derive(Clone, Debug)]
struct Region {
    name: &'static str,
    start: u64,
    end: u64,
    writable: bool,
}

/// The buffers of one run, in parameter order. The typed launch fills it
/// from the kernel's arguments (`*const T` parameters as inputs, `*mut T` as
/// outputs) and hands out the raw pointers the kernel takes.
#[derive(Clone, Debug, Default)]
pub struct Buffers {
    regions: Vec<Region>,
}

impl Buffers {
    /// No buffers: every checked access fails.
    pub fn new() -> Self {
        Buffers::default()
    }

    /// Parameter `name` reads `slice`; returns the pointer the kernel takes.
    pub fn input<T>(&mut self, name: &'static str, slice: &[T]) -> *const T {
        self.add(name, slice.as_ptr(), std::mem::size_of_val(slice), false);
        slice.as_ptr()
    }

    /// Parameter `name` reads and writes `slice`.
    pub fn output<T>(&mut self, name: &'static str, slice: &mut [T]) -> *mut T {
        self.add(name, slice.as_ptr(), std::mem::size_of_val(slice), true);
        slice.as_mut_ptr()
    }

    /// The scheduler's own words (agents' counters), written by atomics.
    pub fn scratch(&mut self, words: &mut [u32]) -> *mut u32 {
        self.output("(the scheduler's scratch)", words)
    }

    fn add<T>(&mut self, name: &'static str, start: *const T, bytes: usize, writable: bool) {
        let start = start as u64;
        self.regions.push(Region {
            name,
            start,
            end: start.saturating_add(bytes as u64),
            writable,
        });
    }

    /// Whether `kind` may touch `bytes` bytes at `address`.
    pub fn check(&self, kind: AccessKind, address: u64, bytes: u32) -> Result<(), Fault> {
        let end = address.saturating_add(u64::from(bytes));
        let writes = matches!(kind, AccessKind::Store | AccessKind::Atomic);
        let inside = self
            .regions
            .iter()
            .filter(|r| r.start <= address && end <= r.end && r.start < r.end);
        let mut read_only = None;
        for region in inside {
            if region.writable || !writes {
                return Ok(());
            }
            read_only = Some(region.name);
        }
        Err(Fault {
            kind,
            address,
            bytes,
            read_only,
            nearest: self.nearest(address),
        })
    }

    /// The buffer closest to `address`, and how far outside it is.
    fn nearest(&self, address: u64) -> Option<(&'static str, i128)> {
        self.regions
            .iter()
            .map(|r| {
                let distance = if address < r.start {
                    i128::from(address) - i128::from(r.start)
                } else {
                    i128::from(address) - i128::from(r.end)
                };
                (r.name, distance)
            })
            .min_by_key(|(_, d)| d.unsigned_abs())
    }
}

/// An access a checked run refused, before it touched memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What the thread was doing.
    pub kind: AccessKind,
    /// The first byte's address.
    pub address: u64,
    /// Bytes accessed.
    pub bytes: u32,
    /// A write inside this input (`*const`) buffer.
    pub read_only: Option<&'static str>,
    /// The nearest buffer, and the byte distance from its start (negative)
    /// or its end (positive, 0: just past it).
    pub nearest: Option<(&'static str, i128)>,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Fault {
            kind,
            address,
            bytes,
            read_only,
            nearest,
        } = self;
        if let Some(name) = read_only {
            return write!(
                f,
                "a {kind:?} of {bytes} bytes at {address:#x} writes into `{name}`, which the kernel takes as `*const`: make the parameter `*mut`"
            );
        }
        write!(
            f,
            "a {kind:?} of {bytes} bytes at {address:#x} is outside every buffer passed to the kernel"
        )?;
        match nearest {
            Some((name, distance)) if *distance < 0 => {
                write!(f, " ({} bytes before `{name}`)", distance.unsigned_abs())
            }
            Some((name, distance)) => write!(f, " ({distance} bytes past the end of `{name}`)"),
            None => Ok(()),
        }?;
        f.write_str(": check the kernel's index against the lengths, or pass longer buffers")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_inside_buffers_pass_and_others_fail() {
        // One allocation with a gap, so that the buffers are not adjacent.
        let mut memory = [0u32; 16];
        let (input, rest) = memory.split_at_mut(4);
        let output = &mut rest[4..6];
        let mut buffers = Buffers::new();
        let a = buffers.input("a", input) as u64;
        let c = buffers.output("c", output) as u64;
        assert!(buffers.check(AccessKind::Load, a + 12, 4).is_ok());
        assert!(buffers.check(AccessKind::Store, c + 4, 4).is_ok());
        let past = buffers.check(AccessKind::Load, a + 16, 4).unwrap_err();
        assert_eq!(past.nearest, Some(("a", 0)));
        assert!(past.to_string().contains("past the end of `a`"), "{past}");
        // Straddling the end is outside too.
        assert!(buffers.check(AccessKind::Load, a + 14, 4).is_err());
        let write = buffers.check(AccessKind::Store, a, 4).unwrap_err();
        assert_eq!(write.read_only, Some("a"));
        assert!(buffers.check(AccessKind::Atomic, a, 4).is_err());
        assert!(Buffers::new().check(AccessKind::Load, a, 4).is_err());
    }
}
