//! A dependency-free progress bar for long simulations.
//!
//! On a terminal it redraws one line in place (`\r`) at most ten times a
//! second; into a file or a pipe (CI logs) it prints a plain line only at each
//! tenth of the work, so that logs stay short.

use std::io::{IsTerminal, Stderr, Write};
use std::time::{Duration, Instant};

/// Least time between two redraws on a terminal.
const REDRAW_EVERY: Duration = Duration::from_millis(100);
/// Characters of the bar itself.
const BAR_WIDTH: usize = 30;

/// Progress of `total_steps` steps, shown on stderr (or any writer, see
/// [`Progress::with_output`]). Write errors are ignored: progress is never
/// worth failing a run for.
pub struct Progress<W: Write = Stderr> {
    output: W,
    terminal: bool,
    label: String,
    total: u64,
    done: u64,
    started: Instant,
    /// When the terminal line was last drawn.
    last_draw: Option<Instant>,
    /// Tenths of the work already reported by plain lines.
    tenths_reported: u64,
    /// Characters of the last terminal line, to blank leftovers of a longer one.
    last_line_chars: usize,
}

impl Progress<Stderr> {
    /// A progress bar on stderr, redrawn in place if stderr is a terminal.
    pub fn new(total_steps: u64, label: &str) -> Self {
        let terminal = std::io::stderr().is_terminal();
        Self::with_output(total_steps, label, std::io::stderr(), terminal)
    }
}

impl<W: Write> Progress<W> {
    /// A progress bar writing to `output`, as on a terminal (redrawn lines) if
    /// `terminal`, else as plain lines.
    pub fn with_output(total_steps: u64, label: &str, output: W, terminal: bool) -> Self {
        Self {
            output,
            terminal,
            label: label.to_string(),
            total: total_steps,
            done: 0,
            started: Instant::now(),
            last_draw: None,
            tenths_reported: 0,
            last_line_chars: 0,
        }
    }

    /// `steps` more steps are done; `detail` says what is going on (shown on
    /// the line).
    pub fn advance(&mut self, steps: u64, detail: &str) {
        self.done = self.done.saturating_add(steps).min(self.total);
        if self.terminal {
            let due = self
                .last_draw
                .is_none_or(|last| last.elapsed() >= REDRAW_EVERY);
            if due || self.done == self.total {
                self.draw_in_place(detail);
            }
        } else {
            let tenths = tenths(self.done, self.total);
            if tenths > self.tenths_reported {
                self.tenths_reported = tenths;
                let line = self.line(detail);
                let _ = writeln!(self.output, "{line}");
            }
        }
    }

    /// Ends the bar: the final state and the time taken, on a line of its own.
    /// Returns the output (the caller's writer, given back).
    pub fn finish(mut self) -> W {
        let elapsed = self.started.elapsed().as_secs_f64();
        let summary = format!(
            "{}: {} of {} steps in {elapsed:.1} s",
            self.label, self.done, self.total
        );
        if self.terminal {
            let _ = write!(self.output, "\r{}\r", " ".repeat(self.last_line_chars));
        }
        let _ = writeln!(self.output, "{summary}");
        let _ = self.output.flush();
        self.output
    }

    /// Redraws the terminal line.
    fn draw_in_place(&mut self, detail: &str) {
        let line = self.line(detail);
        let chars = line.chars().count();
        let blank = " ".repeat(self.last_line_chars.saturating_sub(chars));
        let _ = write!(self.output, "\r{line}{blank}");
        let _ = self.output.flush();
        self.last_line_chars = chars;
        self.last_draw = Some(Instant::now());
    }

    /// `label [#####.....]  45% 450/1000 12.3 s, 15 s left  detail`.
    fn line(&self, detail: &str) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let left = match self.done {
            0 => String::new(),
            done => {
                let remaining = elapsed * (self.total - done) as f64 / done as f64;
                format!(", {remaining:.0} s left")
            }
        };
        let mut line = format!(
            "{} {} {:3}% {}/{} {elapsed:.1} s{left}",
            self.label,
            bar(self.done, self.total, BAR_WIDTH),
            percent(self.done, self.total),
            self.done,
            self.total
        );
        if !detail.is_empty() {
            line.push_str("  ");
            line.push_str(detail);
        }
        line
    }
}

/// Whole percent of `done` out of `total` (100 when there is nothing to do).
fn percent(done: u64, total: u64) -> u64 {
    match total {
        0 => 100,
        total => (u128::from(done) * 100 / u128::from(total)) as u64,
    }
}

/// Whole tenths of `done` out of `total` (10 when there is nothing to do).
fn tenths(done: u64, total: u64) -> u64 {
    match total {
        0 => 10,
        total => (u128::from(done) * 10 / u128::from(total)) as u64,
    }
}

/// `[####......]` with `width` cells, filled in proportion.
fn bar(done: u64, total: u64, width: usize) -> String {
    let filled = match total {
        0 => width,
        total => (u128::from(done) * width as u128 / u128::from(total)) as usize,
    };
    format!("[{}{}]", "#".repeat(filled), ".".repeat(width - filled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_output_prints_each_tenth_once() {
        let mut progress = Progress::with_output(100, "sim", Vec::new(), false);
        for _ in 0..100 {
            progress.advance(1, "kernel");
        }
        let text = String::from_utf8(progress.finish()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 11, "{text}");
        assert!(lines[0].contains(" 10% 10/100"), "{}", lines[0]);
        assert!(lines[9].contains("100% 100/100"), "{}", lines[9]);
        assert!(lines[9].ends_with("  kernel"));
        assert!(lines[10].starts_with("sim: 100 of 100 steps in "));
        assert!(!text.contains('\r'));
    }

    #[test]
    fn plain_output_skips_tenths_jumped_over() {
        let mut progress = Progress::with_output(10, "x", Vec::new(), false);
        progress.advance(7, "");
        progress.advance(100, "");
        let text = String::from_utf8(progress.finish()).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text.contains("10/10"));
    }

    #[test]
    fn terminal_output_redraws_in_place_and_is_rate_limited() {
        let mut progress = Progress::with_output(1_000_000, "sim", Vec::new(), true);
        for _ in 0..1000 {
            progress.advance(1, "");
        }
        progress.advance(1_000_000, "");
        let text = String::from_utf8(progress.finish()).unwrap();
        let redraws = text.matches('\r').count();
        // The first draw, perhaps one more if the loop was slow, the last,
        // and the blanking before the summary (two `\r`).
        assert!((4..=6).contains(&redraws), "{redraws} redraws: {text:?}");
        assert_eq!(text.matches('\n').count(), 1);
        let summary = text.rsplit('\r').next().unwrap();
        assert!(
            summary.starts_with("sim: 1000000 of 1000000 steps in "),
            "{text:?}"
        );
    }

    #[test]
    fn zero_total_does_not_panic() {
        for terminal in [false, true] {
            let mut progress = Progress::with_output(0, "empty", Vec::new(), terminal);
            progress.advance(0, "");
            progress.advance(5, "");
            let text = String::from_utf8(progress.finish()).unwrap();
            assert!(text.contains("empty: 0 of 0 steps"), "{text:?}");
        }
        assert_eq!(bar(0, 0, 4), "[####]");
        assert_eq!(percent(0, 0), 100);
    }

    #[test]
    fn bar_fills_in_proportion() {
        assert_eq!(bar(0, 10, 10), "[..........]");
        assert_eq!(bar(5, 10, 10), "[#####.....]");
        assert_eq!(bar(10, 10, 10), "[##########]");
        assert_eq!(percent(u64::MAX, u64::MAX), 100);
    }
}
