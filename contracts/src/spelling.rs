//! How far apart two spellings are: what a "did you mean" picks its suggestion by (a
//! misspelt key of a scenario file, an unknown field of a request).

/// Edits from `a` to `b`, by characters: insertions, deletions, substitutions, and two
/// neighbours swapped (`ned` is one edit from `end`).
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_edit_counts_one() {
        assert_eq!(distance("end", "end"), 0);
        assert_eq!(distance("ned", "end"), 1);
        assert_eq!(distance("ed", "end"), 1);
        assert_eq!(distance("ends", "end"), 1);
        assert_eq!(distance("and", "end"), 1);
        assert_eq!(distance("", "end"), 3);
        assert_eq!(distance("desciption", "description"), 1);
    }
}
