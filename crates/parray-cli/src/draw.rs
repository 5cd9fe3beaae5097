//! `parray draw`: a 2-D picture of a type's storage order (like the paper's Figs 3, 15, 16).
//!
//! Rows are the type's first top-level dimension (flattened), columns the rest (flattened);
//! a type with one top-level dimension is one row. Each cell shows its physical offset,
//! coloured by offset: blue for the start of the storage, red for its end.

use std::fmt::Write as _;
use std::io::IsTerminal;

use crate::diag::{Failure, EXIT_OUTPUT};
use crate::input::Input;
use crate::{Color, Out, Written};
use parray_core::eval::Program;

/// Window shown in the terminal and in SVG.
const TERM_WINDOW: u64 = 16;
const SVG_WINDOW: u64 = 64;

/// The picture's content: a window of the offsets of a 2-D view.
struct Grid {
    title: String,
    layout: String,
    rows: u64,
    cols: u64,
    extent: u64,
    /// The first row and column shown.
    row0: u64,
    col0: u64,
    /// `cells[r][c]` for the rows and columns shown.
    cells: Vec<Vec<u64>>,
}

impl Grid {
    fn shown_rows(&self) -> usize {
        self.cells.len()
    }

    fn shown_cols(&self) -> usize {
        self.cells.first().map_or(0, Vec::len)
    }

    fn window_note(&self) -> Option<String> {
        let (r, c) = (self.shown_rows() as u64, self.shown_cols() as u64);
        (r < self.rows || c < self.cols).then(|| {
            format!(
                "showing rows {}..{} of {}, columns {}..{} of {} (choose with --rows and --cols)",
                self.row0,
                self.row0 + r,
                self.rows,
                self.col0,
                self.col0 + c,
                self.cols
            )
        })
    }
}

/// Which rows and columns to draw: `a..b` ranges (`None`: from 0, as many as the view
/// shows by default).
#[derive(Debug, Clone, Default)]
pub struct Window {
    pub rows: Option<(u64, u64)>,
    pub cols: Option<(u64, u64)>,
}

/// A `--rows`/`--cols` value `a..b` (`b > a`).
pub fn parse_range(flag: &str, text: &str) -> Result<(u64, u64), Failure> {
    let bad = || {
        Failure {
        message: format!("in {flag} {text}: expected a range `a..b` of whole numbers with a < b, such as {flag} 0..32"),
        snippet: None,
        code: crate::diag::EXIT_INPUT,
    }
    };
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let (a, b) = (
        a.trim().parse::<u64>().map_err(|_| bad())?,
        b.trim().parse::<u64>().map_err(|_| bad())?,
    );
    if a >= b {
        return Err(bad());
    }
    Ok((a, b))
}

pub fn draw(
    input: &Input,
    name: &str,
    window: &Window,
    svg: Option<&str>,
    color: Color,
    out: Out,
) -> Result<(), Written> {
    let t = input.target(name)?;
    let m = &input.module;
    let f = input.offset_function(&t, "i")?;
    let node = m.node(t.node);
    let size = node.size;
    let (rows, cols, layout) = if node.children.len() >= 2 {
        let rows = m.size(node.children[0]);
        (
            rows,
            size / rows,
            format!(
                "rows: {name}_0 ({rows}), columns: {} ({})",
                if node.children.len() == 2 {
                    format!("{name}_1")
                } else {
                    format!("{name}_1..{name}_{}", node.children.len() - 1)
                },
                size / rows
            ),
        )
    } else {
        (1, size, format!("one row of {size}"))
    };
    let default = if svg.is_some() {
        SVG_WINDOW
    } else {
        TERM_WINDOW
    };
    let range = |chosen: Option<(u64, u64)>, n: u64, what: &str| -> Result<(u64, u64), Failure> {
        let (a, b) = chosen.unwrap_or((0, default));
        if a >= n {
            return Err(Failure {
                message: format!("{name} has {n} {what}: the window starts past them (at {a})"),
                snippet: None,
                code: crate::diag::EXIT_INPUT,
            });
        }
        Ok((a, b.min(n)))
    };
    let (r0, r1) = range(window.rows, rows, "rows")?;
    let (c0, c1) = range(window.cols, cols, "columns")?;
    let mut prog = Program::new(&f.expr);
    let cells = (r0..r1)
        .map(|r| (c0..c1).map(|c| prog.eval(&[r * cols + c])).collect())
        .collect();
    let def = &m.types()[t.ty];
    let class = match &def.class {
        parray_core::TypeClass::Data {
            mem: Some(mem),
            elem,
        } => format!("{mem} {elem}"),
        parray_core::TypeClass::Data { mem: None, elem } => format!("{elem} view"),
        parray_core::TypeClass::Thread(k) => format!("{} thread array", k.keyword()),
    };
    let grid = Grid {
        title: format!("{name} ({class}): size {size}, extent {}", m.extent(t.node)),
        layout,
        rows,
        cols,
        extent: m.extent(t.node),
        row0: r0,
        col0: c0,
        cells,
    };
    match svg {
        Some(path) => {
            let text = svg_text(&grid);
            if path == "-" {
                out.write_all(text.as_bytes())?;
            } else {
                std::fs::write(path, text).map_err(|e| Failure {
                    message: format!("cannot write `{path}`: {e}"),
                    snippet: None,
                    code: EXIT_OUTPUT,
                })?;
                writeln!(
                    out,
                    "wrote {path}: {} x {} cells",
                    grid.shown_rows(),
                    grid.shown_cols()
                )?;
            }
        }
        None => {
            let colored = match color {
                Color::Always => true,
                Color::Never => false,
                Color::Auto => std::io::stdout().is_terminal(),
            };
            out.write_all(terminal_text(&grid, colored).as_bytes())?;
        }
    }
    Ok(())
}

/// Where an offset lies in the storage, from 0 (first) to 1 (last).
fn position(off: u64, extent: u64) -> f64 {
    if extent <= 1 {
        0.0
    } else {
        off as f64 / (extent - 1) as f64
    }
}

/// Hue of the colour ramp: 240 (blue) at the start of the storage to 0 (red) at its end.
fn hue(off: u64, extent: u64) -> f64 {
    240.0 * (1.0 - position(off, extent))
}

fn hsl_to_rgb(h: f64, s: f64, l: f64) -> (u8, u8, u8) {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let hp = (h / 60.0).rem_euclid(6.0);
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let mm = l - c / 2.0;
    let to = |v: f64| ((v + mm) * 255.0).round().clamp(0.0, 255.0) as u8;
    (to(r), to(g), to(b))
}

/// The nearest colour of the xterm 6x6x6 cube.
fn ansi256(rgb: (u8, u8, u8)) -> u8 {
    let q = |v: u8| -> u8 {
        match v {
            0..=47 => 0,
            48..=114 => 1,
            v => ((v - 35) / 40).min(5),
        }
    };
    16 + 36 * q(rgb.0) + 6 * q(rgb.1) + q(rgb.2)
}

fn terminal_text(g: &Grid, colored: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}; {}", g.title, g.layout);
    if let Some(note) = g.window_note() {
        let _ = writeln!(s, "{note}");
    }
    let max_off = g.cells.iter().flatten().copied().max().unwrap_or(0);
    let last_col = g.col0 + (g.shown_cols() as u64).saturating_sub(1);
    let w = max_off.to_string().len().max(last_col.to_string().len());
    let rw = (g.row0 + (g.shown_rows() as u64).saturating_sub(1))
        .to_string()
        .len();
    // Column numbers.
    let _ = write!(s, "{:rw$} ", "");
    for c in g.col0..=last_col {
        let _ = write!(s, " {c:>w$} ");
    }
    let trimmed = s.trim_end_matches(' ').len();
    s.truncate(trimmed);
    s.push('\n');
    for (r, row) in g.cells.iter().enumerate() {
        let r = g.row0 + r as u64;
        let _ = write!(s, "{r:>rw$} ");
        for &off in row {
            if colored {
                let bg = ansi256(hsl_to_rgb(hue(off, g.extent), 0.8, 0.62));
                let _ = write!(s, "\x1b[48;5;{bg}m\x1b[38;5;16m {off:>w$} ");
            } else {
                let _ = write!(s, " {off:>w$} ");
            }
        }
        if colored {
            s.push_str("\x1b[0m");
        }
        // No trailing blanks in the plain view.
        if !colored {
            let trimmed = s.trim_end_matches(' ').len();
            s.truncate(trimmed);
        }
        s.push('\n');
    }
    s
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

fn svg_text(g: &Grid) -> String {
    let max_off = g.cells.iter().flatten().copied().max().unwrap_or(0);
    let digits = max_off.to_string().len().max(2) as u64;
    let (cw, ch) = (digits * 7 + 12, 20u64);
    let label_w = (g.row0 + g.shown_rows().max(1) as u64 - 1)
        .to_string()
        .len() as u64
        * 7
        + 16;
    let (left, top) = (label_w, 64u64);
    let width = (left + cw * g.shown_cols() as u64 + 10).max(480);
    let height = top + ch * g.shown_rows() as u64 + 10;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">"#
    );
    let _ = writeln!(s, "<title>{}</title>", xml_escape(&g.title));
    let _ = writeln!(
        s,
        r#"<text x="4" y="18" font-size="14" font-weight="bold">{}</text>"#,
        xml_escape(&g.title)
    );
    let mut sub = g.layout.clone();
    if let Some(note) = g.window_note() {
        sub = format!("{sub}; {note}");
    }
    let _ = writeln!(s, r#"<text x="4" y="36">{}</text>"#, xml_escape(&sub));
    for c in 0..g.shown_cols() as u64 {
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle" fill="gray">{}</text>"#,
            left + c * cw + cw / 2,
            top - 6,
            g.col0 + c
        );
    }
    for (r, row) in g.cells.iter().enumerate() {
        let y = top + r as u64 * ch;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end" fill="gray">{}</text>"#,
            left - 4,
            y + ch / 2 + 4,
            g.row0 + r as u64
        );
        for (c, &off) in row.iter().enumerate() {
            let x = left + c as u64 * cw;
            let (lr, lc) = (g.row0 + r as u64, g.col0 + c as u64);
            let _ = writeln!(
                s,
                r#"<rect x="{x}" y="{y}" width="{cw}" height="{ch}" fill="hsl({:.0}, 80%, 70%)" stroke="white"><title>[{lr}][{lc}] = {off}</title></rect><text x="{}" y="{}" text-anchor="middle">{off}</text>"#,
                hue(off, g.extent),
                x + cw / 2,
                y + ch / 2 + 4
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_ends() {
        assert_eq!(hsl_to_rgb(0.0, 1.0, 0.5), (255, 0, 0));
        assert_eq!(hsl_to_rgb(240.0, 1.0, 0.5), (0, 0, 255));
        assert_eq!(ansi256((255, 0, 0)), 196);
        assert_eq!(ansi256((0, 0, 255)), 21);
        assert_eq!(hue(0, 10), 240.0);
        assert_eq!(hue(9, 10), 0.0);
        assert_eq!(hue(0, 1), 240.0);
    }
}
