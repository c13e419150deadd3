//! The numbers as people read them: rates, times, sizes, and columns laid out.

use super::*;

pub(super) fn per_second(count: u64, time: Duration) -> f64 {
    count as f64 / time.as_secs_f64().max(1e-12)
}

pub(super) fn nanos_each(count: u64, time: Duration) -> f64 {
    time.as_secs_f64() * 1e9 / count as f64
}

pub(super) fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(
        || "n/a".to_string(),
        |b| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
    )
}

/// `12.3 M/s` and the like.
pub(super) fn rate(per_second: f64) -> String {
    if per_second >= 1e9 {
        format!("{:.2} G/s", per_second / 1e9)
    } else if per_second >= 1e6 {
        format!("{:.2} M/s", per_second / 1e6)
    } else {
        format!("{:.1} k/s", per_second / 1e3)
    }
}
/// Lays out rows of cells in columns: text left, numbers right.
pub(super) fn layout(rows: &[Vec<String>], right: &[bool]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let pad = widths[c] - cell.chars().count();
            if right.get(c).copied().unwrap_or(false) {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}
