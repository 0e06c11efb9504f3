//! Text tables whose columns line up whatever their cells' lengths: each column is as wide as
//! its longest cell, the header's included.

/// The table as lines, each starting with `indent`, trailing spaces trimmed. `align` has one
/// character per column of `head`: `l` (left) or `r` (right); columns are one space apart. A
/// row with fewer cells than `head` ends in free text: its last cell starts where its column
/// does and is not measured (e.g. `name  unavailable: why`).
pub(crate) fn render(indent: &str, align: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    let n = head.len();
    let left: Vec<bool> =
        align.chars().map(|c| c == 'l').chain(std::iter::repeat(false)).take(n).collect();
    let len = |c: &str| c.chars().count();
    let mut width: Vec<usize> = head.iter().map(|h| len(h)).collect();
    for r in rows {
        let measured = if r.len() < n { r.len().saturating_sub(1) } else { n };
        for (w, c) in width.iter_mut().zip(r.iter().take(measured)) {
            *w = (*w).max(len(c));
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::from(indent);
        for (i, c) in cells.iter().enumerate().take(n) {
            if i > 0 {
                s.push(' ');
            }
            let free = cells.len() < n && i + 1 == cells.len();
            let pad = " ".repeat(width[i].saturating_sub(len(c)));
            if free {
                s += c;
            } else if left[i] {
                s += c;
                s += &pad;
            } else {
                s += &pad;
                s += c;
            }
        }
        s.truncate(s.trim_end().len());
        s + "\n"
    };
    let head: Vec<String> = head.iter().map(|h| h.to_string()).collect();
    std::iter::once(&head).chain(rows).map(|r| line(r)).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_are_as_wide_as_their_longest_cell() {
        let rows = vec![
            vec!["a very long name indeed".to_string(), "1.0".into(), "x".into()],
            vec!["b".to_string(), "12345.0".into(), "yes".into()],
            vec!["c".to_string(), "unavailable: no zstd".into()],
        ];
        let t = super::render("  ", "lrl", &["name", "n", "ok"], &rows);
        assert_eq!(
            t,
            "  name                          n ok\n  \
             a very long name indeed     1.0 x\n  \
             b                       12345.0 yes\n  \
             c                       unavailable: no zstd\n"
        );
    }
}
