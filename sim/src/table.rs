//! Plain-text tables for reports: columns aligned, numbers right-aligned so
//! that their digits line up, text left-aligned.

/// Columns between two cells.
const COLUMN_GAP: &str = "  ";

/// `headers` and `rows` as an aligned table: a header line, a rule of dashes,
/// one line per row, each ending in a newline (trailing spaces trimmed); an
/// empty string if there is no column at all.
///
/// A cell is a number, and right-aligned, if it parses as an `f64` or is a
/// number followed by `x` or `%` ("1.46x", "55%"). A header is right-aligned
/// when every non-empty cell of its column is a number. Rows shorter than the
/// header are padded with empty cells; longer ones get columns without a
/// header.
pub fn format_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let columns = rows
        .iter()
        .map(Vec::len)
        .chain([headers.len()])
        .max()
        .unwrap_or(0);
    if columns == 0 {
        return String::new();
    }
    let widths: Vec<usize> = (0..columns)
        .map(|column| {
            let header = headers
                .get(column)
                .map_or(0, |header| header.chars().count());
            rows.iter()
                .map(|row| cell(row, column).chars().count())
                .fold(header, usize::max)
        })
        .collect();
    let numeric_column: Vec<bool> = (0..columns)
        .map(|column| {
            rows.iter()
                .map(|row| cell(row, column))
                .filter(|text| !text.is_empty())
                .all(is_number)
        })
        .collect();

    let mut table = String::new();
    let header_cells = (0..columns).map(|column| {
        let header = headers.get(column).copied().unwrap_or("");
        (header, numeric_column[column])
    });
    push_line(&mut table, header_cells, &widths);
    let rule = widths
        .iter()
        .map(|&width| "-".repeat(width))
        .collect::<Vec<_>>();
    push_line(
        &mut table,
        rule.iter().map(|dashes| (dashes.as_str(), false)),
        &widths,
    );
    for row in rows {
        let cells = (0..columns).map(|column| {
            let text = cell(row, column);
            (text, is_number(text))
        });
        push_line(&mut table, cells, &widths);
    }
    table
}

/// The text of `row`'s cell in `column` ("" past its end).
fn cell(row: &[String], column: usize) -> &str {
    row.get(column).map_or("", String::as_str)
}

/// Appends one line of `(text, right_aligned)` cells padded to `widths`.
fn push_line<'a>(
    table: &mut String,
    cells: impl Iterator<Item = (&'a str, bool)>,
    widths: &[usize],
) {
    let mut line = String::new();
    for (column, ((text, right), &width)) in cells.zip(widths).enumerate() {
        if column > 0 {
            line.push_str(COLUMN_GAP);
        }
        let padding = " ".repeat(width - text.chars().count());
        if right {
            line.push_str(&padding);
            line.push_str(text);
        } else {
            line.push_str(text);
            line.push_str(&padding);
        }
    }
    table.push_str(line.trim_end());
    table.push('\n');
}

/// Whether `text` is a number, possibly followed by `x` or `%`.
fn is_number(text: &str) -> bool {
    let text = text.trim();
    let number = text
        .strip_suffix('x')
        .or_else(|| text.strip_suffix('%'))
        .unwrap_or(text);
    !number.is_empty() && number.parse::<f64>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|cell| cell.to_string()).collect()
    }

    #[test]
    fn numbers_right_text_left() {
        let table = format_table(
            &["kernel", "speedup", "L1 hit"],
            &[
                row(&["sgemm", "1.46x", "93%"]),
                row(&["transpose", "0.9x", "5.5%"]),
            ],
        );
        let expected = "\
kernel     speedup  L1 hit
---------  -------  ------
sgemm        1.46x     93%
transpose     0.9x    5.5%
";
        assert_eq!(table, expected);
    }

    #[test]
    fn ragged_rows_and_mixed_columns() {
        let table = format_table(&["a", "b"], &[row(&["1"]), row(&["x", "2", "extra"])]);
        let expected = "\
a  b
-  -  -----
1
x  2  extra
";
        assert_eq!(table, expected);
    }

    #[test]
    fn what_counts_as_a_number() {
        for number in ["1", "-2.5", "1e9", "1.46x", "55%", " 3 "] {
            assert!(is_number(number), "{number}");
        }
        for text in ["", "x", "%", "sgemm", "1.2.3", "x1", "12 KB"] {
            assert!(!is_number(text), "{text}");
        }
    }

    #[test]
    fn empty_table() {
        assert_eq!(format_table(&[], &[]), "");
        assert_eq!(format_table(&[], &[Vec::new()]), "");
    }
}
