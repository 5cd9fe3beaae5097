//! A dimension's name as written, `A_0_1`: a declared name, then the numbers of the
//! children walked below it, each after a `_`. The one reading of that grammar: the
//! resolver, the interpreter, the front end's `$...$` words (`tid_0`, `dim_1`) and the
//! writers of such names all go through it.

use std::fmt;

/// `name` followed by `_k` for each child number `k` (`A_0_1`: `A`, `[0, 1]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimPath<'a> {
    pub name: &'a str,
    pub children: Vec<usize>,
}

impl<'a> DimPath<'a> {
    /// Every reading of `written`, the longest name first: a declared name may itself end
    /// in `_<digits>` (`QUADS_STORE_0` is the type `QUADS_STORE_0` or child 0 of
    /// `QUADS_STORE`), and the longest declared one is meant.
    pub fn readings(written: &'a str) -> impl Iterator<Item = DimPath<'a>> {
        let mut next = Some(written.len());
        std::iter::from_fn(move || {
            let end = next?;
            next = written[..end]
                .rfind('_')
                .filter(|&i| child_number(&written[i + 1..end]).is_some());
            Some(DimPath {
                name: &written[..end],
                children: children(&written[end..]),
            })
        })
    }

    /// The reading with the shortest name: every `_<digits>` suffix a child.
    pub fn split(written: &'a str) -> DimPath<'a> {
        Self::readings(written)
            .last()
            .expect("a name reads at least as itself")
    }

    /// The child numbers of `word` when it is `stem` followed by `_<digits>` suffixes
    /// (`tid_0_1` with stem `tid`: `[0, 1]`); `None` when it is not.
    pub fn after(stem: &str, word: &str) -> Option<Vec<usize>> {
        let rest = word.strip_prefix(stem)?;
        if rest.is_empty() {
            return Some(Vec::new());
        }
        let rest = rest.strip_prefix('_')?;
        rest.split('_').map(child_number).collect()
    }
}

/// The name of child `k` of the dimension named `parent`.
pub fn child_name(parent: &str, k: usize) -> String {
    format!("{parent}_{k}")
}

impl fmt::Display for DimPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)?;
        for k in &self.children {
            write!(f, "_{k}")?;
        }
        Ok(())
    }
}

/// `part` as a child number: decimal digits only (no sign, no space), within `usize`.
fn child_number(part: &str) -> Option<usize> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    part.parse().ok()
}

/// The child numbers of a suffix `_k_l...` that [`DimPath::readings`] accepted.
fn children(suffix: &str) -> Vec<usize> {
    suffix
        .split('_')
        .skip(1)
        .map(|p| child_number(p).expect("a suffix of child numbers"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_go_from_the_longest_name() {
        let r: Vec<String> = DimPath::readings("QUADS_STORE_0_12")
            .map(|p| format!("{} {:?}", p.name, p.children))
            .collect();
        assert_eq!(
            r,
            [
                "QUADS_STORE_0_12 []",
                "QUADS_STORE_0 [12]",
                "QUADS_STORE [0, 12]"
            ]
        );
        assert_eq!(DimPath::split("A_x_1").name, "A_x");
        assert_eq!(DimPath::split("A__1").name, "A_");
        assert_eq!(DimPath::split("A_01").to_string(), "A_1");
        // A number too large for a child is part of the name.
        assert_eq!(DimPath::split("A_99999999999999999999").children, []);
    }

    #[test]
    fn a_stem_then_children() {
        assert_eq!(DimPath::after("tid", "tid"), Some(vec![]));
        assert_eq!(DimPath::after("tid", "tid_0_1"), Some(vec![0, 1]));
        assert_eq!(DimPath::after("tid", "tid_"), None);
        assert_eq!(DimPath::after("tid", "tidy"), None);
        assert_eq!(DimPath::after("dim", "dim_a"), None);
    }
}
