//! Errors of the command and their rendering: `error: ...` and, for errors with a
//! position, the offending source line with a caret under it (like rustc).

use std::fmt::Write as _;

use parray_layout::TextSpan;

/// Exit status for bad input (syntax, semantics, unknown names, unreadable files), as clap
/// uses for bad usage.
pub const EXIT_INPUT: i32 = 2;
/// Exit status when writing the output fails.
pub const EXIT_OUTPUT: i32 = 1;
/// Exit status for an internal error (a panic, or a self-check that failed): EX_SOFTWARE.
pub const EXIT_INTERNAL: i32 = 70;

/// A failure of the command: what `error: ` prints, the snippet under it, the exit status.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub snippet: Option<String>,
    pub code: i32,
}

impl Failure {
    pub fn input(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            snippet: None,
            code: EXIT_INPUT,
        }
    }

    pub fn with_snippet(mut self, snippet: Option<String>) -> Failure {
        self.snippet = snippet;
        self
    }

    /// What goes to stderr.
    pub fn render(&self) -> String {
        let mut s = format!("error: {}\n", self.message);
        if let Some(snip) = &self.snippet {
            s.push_str(snip);
        }
        s
    }
}

/// A text that positions refer to: the input file, an `EXPR` argument, a `--const` value.
pub struct Source<'a> {
    /// How to name it after ` --> ` (a path, `<stdin>`, `<expression>`).
    pub name: &'a str,
    pub text: &'a str,
}

/// Longest part of a source line shown on each side of the caret.
const CONTEXT: usize = 60;

/// The rustc-style excerpt for `span` in `src`, or `None` when the span has no position.
pub fn snippet(src: &Source, span: TextSpan) -> Option<String> {
    if span.line == 0 {
        return None;
    }
    let start = span.start.min(src.text.len());
    if !src.text.is_char_boundary(start) {
        return None;
    }
    let line_start = src.text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = src.text[start..]
        .find('\n')
        .map_or(src.text.len(), |i| start + i);
    let line = &src.text[line_start..line_end];
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut end = span.end.clamp(start, line_start + line.len());
    while !src.text.is_char_boundary(end) {
        end += 1;
    }
    let before: Vec<char> = src.text[line_start..start].chars().collect();
    let marked = src.text[start..end].chars().count().max(1);
    let after: Vec<char> = src.text[start.min(line_start + line.len())..line_start + line.len()]
        .chars()
        .collect();

    // Show at most CONTEXT characters either side of the start of the span.
    let (skip, lead) = if before.len() > CONTEXT {
        (before.len() - CONTEXT, "...")
    } else {
        (0, "")
    };
    let shown_before: String = before[skip..].iter().map(|&c| printable(c)).collect();
    let keep_after = marked.max(CONTEXT).min(after.len());
    let shown_after: String = after[..keep_after].iter().map(|&c| printable(c)).collect();
    let tail = if keep_after < after.len() { "..." } else { "" };
    let marked = marked.min(keep_after.max(1));
    let pad: String = before[skip..]
        .iter()
        .map(|&c| if c == '\t' { '\t' } else { ' ' })
        .collect();

    let num = span.line.to_string();
    let gutter = " ".repeat(num.len());
    let mut s = String::new();
    let _ = writeln!(s, "{gutter}--> {}:{}:{}", src.name, span.line, span.col);
    let _ = writeln!(s, "{gutter} |");
    let _ = writeln!(s, "{num} | {lead}{shown_before}{shown_after}{tail}");
    let _ = writeln!(
        s,
        "{gutter} | {}{pad}{}",
        " ".repeat(lead.len()),
        "^".repeat(marked)
    );
    Some(s)
}

fn printable(c: char) -> char {
    if c == '\t' || !c.is_control() {
        c
    } else {
        '?'
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_under_the_span() {
        let text = "float [4] A\nfloat [#X_1] B\n";
        let start = text.find("X_1").unwrap();
        let span = TextSpan::locate(text, start, start + 3);
        let s = snippet(&Source { name: "f", text }, span).unwrap();
        assert_eq!(s, " --> f:2:9\n  |\n2 | float [#X_1] B\n  |         ^^^\n");
    }

    #[test]
    fn long_lines_are_cut() {
        let text = format!("{}X{}", "a".repeat(500), "b".repeat(500));
        let span = TextSpan::locate(&text, 500, 501);
        let s = snippet(
            &Source {
                name: "f",
                text: &text,
            },
            span,
        )
        .unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[2].len() < 200);
        let caret = lines[3].find('^').unwrap();
        assert_eq!(&lines[2][caret..caret + 1], "X");
    }

    #[test]
    fn spans_inside_a_character() {
        let text = "ab\u{FFFD}cd";
        let span = TextSpan::locate(text, 2, 3);
        let s = snippet(&Source { name: "f", text }, span).unwrap();
        assert!(s.ends_with("1 | ab\u{FFFD}cd\n  |   ^\n"), "{s}");
    }

    #[test]
    fn end_of_input() {
        let text = "float [4";
        let span = TextSpan::locate(text, text.len(), text.len());
        let s = snippet(&Source { name: "f", text }, span).unwrap();
        assert!(s.ends_with("1 | float [4\n  |         ^\n"), "{s}");
    }
}
