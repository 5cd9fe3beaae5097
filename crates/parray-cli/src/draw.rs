//! `parray draw`: a 2-D picture of a type's storage order (like the paper's Figs 3, 15, 16).
//!
//! Rows are the type's first top-level dimension (flattened), columns the rest (flattened);
//! a type with one top-level dimension is one row. Each cell shows its physical offset,
//! coloured by offset: blue for the start of the storage, red for its end. Lines separate
//! the groups of an axis made of several dimensions (`[4][6]` columns: 4 groups of 6):
//! `│` and `─` in the terminal, thicker lines in SVG. `--window` sets how many rows and
//! columns are shown, `--zoom` samples them (every N-th, or one cell per tile). A
//! distributed type (a fragment over a block's threads, SPEC 2.14, or a type over an mpi
//! array's ranks, 2.13) shows each cell as its holder and the offset in the holder's part,
//! `thread:register` (`rank:offset`), coloured by holder: its thread map.

use std::fmt::Write as _;
use std::io::IsTerminal;

use crate::diag::{Failure, EXIT_OUTPUT};
use crate::input::Input;
use crate::{Color, Out, Written};
use parray_layout::eval::Program;
use parray_layout::{Distribution, Holders, Module, NodeId};

/// Rows and columns shown where no range is given: in the terminal, and in SVG.
const TERM_WINDOW: u64 = 16;
const SVG_WINDOW: u64 = 64;
/// The most rows, and the most columns, one picture shows.
const MAX_SHOWN: u64 = 256;

/// How the rows and columns shown are sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zoom {
    /// Every `n`-th row and column (1: every one).
    Every(u64),
    /// One cell per tile: every row of the rows' finest group, every column of the columns'.
    Tiles,
}

impl Default for Zoom {
    fn default() -> Zoom {
        Zoom::Every(1)
    }
}

/// Which rows and columns to draw: `a..b` ranges of the type's own rows and columns
/// (`None`: from 0, as many as `shown` or the default), sampled by `zoom`.
#[derive(Debug, Clone, Default)]
pub struct Window {
    pub rows: Option<(u64, u64)>,
    pub cols: Option<(u64, u64)>,
    pub zoom: Zoom,
    /// How many rows and columns are shown where no range is given.
    pub shown: Option<(u64, u64)>,
}

/// A `--rows`/`--cols` value `a..b` (`b > a`).
pub fn parse_range(flag: &str, text: &str) -> Result<(u64, u64), Failure> {
    let bad = || {
        Failure::input(format!(
            "in {flag} {text}: expected a range `a..b` of whole numbers with a < b, such as {flag} 0..32"
        ))
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

/// A `--zoom` value: `N` (every N-th row and column) or `tiles`.
pub fn parse_zoom(text: &str) -> Result<Zoom, Failure> {
    if text == "tiles" {
        return Ok(Zoom::Tiles);
    }
    match text.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(Zoom::Every(n)),
        _ => Err(Failure::input(format!(
            "in --zoom {text}: expected a whole number N >= 1 (every N-th row and column, such as --zoom 8) or `tiles` (one cell per tile)"
        ))),
    }
}

/// A `--window` value: `N` (N rows and N columns) or `RxC`, each at most [`MAX_SHOWN`].
pub fn parse_shown(text: &str) -> Result<(u64, u64), Failure> {
    let (r, c) = text.split_once('x').unwrap_or((text, text));
    let count = |s: &str| s.trim().parse::<u64>().ok().filter(|&n| n >= 1);
    let (Some(r), Some(c)) = (count(r), count(c)) else {
        return Err(Failure::input(format!(
            "in --window {text}: expected how many rows and columns to show, N or RxC (such as --window 128 or --window 32x128)"
        )));
    };
    if r > MAX_SHOWN || c > MAX_SHOWN {
        return Err(Failure::input(format!(
            "in --window {text}: a picture shows at most {MAX_SHOWN} rows and {MAX_SHOWN} columns; choose a part with --rows and --cols, or sample the whole with --zoom"
        )));
    }
    Ok((r, c))
}

/// One axis of the picture, the type's rows or its columns: its dimensions and which of
/// its indices are shown (`start`, `start + step`, ... below `end`, `count` of them).
struct Axis {
    /// The type's number of rows (columns).
    size: u64,
    /// The sizes of the leaves of the axis' dimension trees, in order: the digits of a
    /// row (column) number (`[4][6]`: 4, 6).
    leaves: Vec<u64>,
    /// The sizes of its groups, finest first: the products of its trailing leaves
    /// (`[4][6]`: 6; `[[2][4][6]]`: 6 and 24).
    groups: Vec<u64>,
    start: u64,
    step: u64,
    count: u64,
    end: u64,
}

impl Axis {
    /// The axis made of the dimensions `dims`, everything shown.
    fn new(m: &Module, dims: &[NodeId]) -> Axis {
        let all: Vec<u64> = dims
            .iter()
            .flat_map(|&d| m.leaves(d))
            .map(|leaf| m.node(leaf).size)
            .collect();
        let size = all.iter().product();
        let mut groups: Vec<u64> = Vec::new();
        let mut g = 1;
        for &leaf in all.iter().skip(1).rev() {
            g *= leaf;
            if g > groups.last().copied().unwrap_or(1) {
                groups.push(g);
            }
        }
        Axis {
            size,
            leaves: all,
            groups,
            start: 0,
            step: 1,
            count: size,
            end: size,
        }
    }

    /// `name (size = 4 x 6)`: how the axis is labelled.
    fn label(&self, name: &str) -> String {
        let digits: Vec<String> = self
            .leaves
            .iter()
            .filter(|&&l| l > 1)
            .map(u64::to_string)
            .collect();
        if digits.len() > 1 {
            format!("{name} ({} = {})", self.size, digits.join(" x "))
        } else {
            format!("{name} ({})", self.size)
        }
    }

    /// Show the range `chosen` (default: from 0, `default` shown) in steps of `step`.
    fn choose(
        &mut self,
        chosen: Option<(u64, u64)>,
        step: u64,
        default: u64,
        (flag, what, name): (&str, &str, &str),
    ) -> Result<(), Failure> {
        let (start, end) = chosen.unwrap_or((0, default.saturating_mul(step)));
        if start >= self.size {
            return Err(Failure::input(format!(
                "{name} has {} {what}: the window starts past them (at {start})",
                self.size
            )));
        }
        let end = end.min(self.size);
        let count = (end - start).div_ceil(step);
        if count > MAX_SHOWN {
            let (a, b) = chosen.unwrap_or((start, end));
            return Err(Failure::input(format!(
                "in {flag} {a}..{b}: that is {count} {what} to show, and a picture shows at most {MAX_SHOWN}: choose a smaller range, or sample it with --zoom {}",
                (end - start).div_ceil(MAX_SHOWN)
            )));
        }
        (self.start, self.step, self.count, self.end) = (start, step, count, end);
        Ok(())
    }

    /// The type's index of the `k`-th shown row (column).
    fn index(&self, k: u64) -> u64 {
        self.start + k * self.step
    }

    /// The indices shown.
    fn shown(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.count).map(|k| self.index(k))
    }

    /// How many group boundaries lie between the shown rows (columns) `k - 1` and `k`:
    /// 0 for none (and for `k = 0`), counting only groups of more than one shown row.
    fn separator(&self, k: u64) -> usize {
        if k == 0 {
            return 0;
        }
        let (a, b) = (self.index(k - 1), self.index(k));
        self.groups
            .iter()
            .filter(|&&g| g > self.step && a / g != b / g)
            .count()
    }

    /// Whether every index is shown.
    fn whole(&self) -> bool {
        self.start == 0 && self.end == self.size && self.step == 1
    }

    /// `rows 0..128 of 128 in steps of 16`.
    fn shown_text(&self, what: &str) -> String {
        let steps = match self.step {
            1 => String::new(),
            s => format!(" in steps of {s}"),
        };
        format!(
            "{what} {}..{} of {}{steps}",
            self.start, self.end, self.size
        )
    }
}

/// The picture's content: a window of the offsets of a 2-D view.
struct Grid {
    title: String,
    layout: String,
    extent: u64,
    rows: Axis,
    cols: Axis,
    /// One cell per tile (`--zoom tiles`).
    tiles: bool,
    /// `cells[r][c]` for the rows and columns shown.
    cells: Vec<Vec<u64>>,
    /// Of a distributed type, the holders' parts: a cell is then `holder:offset in part`.
    parts: Option<Parts>,
}

/// How a distributed type's offsets fall to its holders (SPEC 2.13, 2.14): the holder of
/// offset `o` is `o / part`, and `o % part` the offset in its part (a thread's register).
struct Parts {
    part: u64,
    holders: u64,
}

impl Parts {
    fn of(d: &Distribution) -> Parts {
        Parts {
            part: d.part.max(1),
            holders: d.ranks.max(1),
        }
    }
}

impl Grid {
    fn shown_rows(&self) -> usize {
        self.cells.len()
    }

    fn shown_cols(&self) -> usize {
        self.cells.first().map_or(0, Vec::len)
    }

    /// A cell's text: its offset, or of a distributed type `holder:offset in part`.
    fn label(&self, off: u64) -> String {
        match &self.parts {
            None => off.to_string(),
            Some(p) => format!("{}:{}", off / p.part, off % p.part),
        }
    }

    /// A cell's hue: by offset, or of a distributed type by holder, so that one thread's
    /// (rank's) cells share a colour.
    fn hue(&self, off: u64) -> f64 {
        match &self.parts {
            None => hue(off, self.extent),
            Some(p) => hue(off / p.part, p.holders),
        }
    }

    /// The widest cell text shown.
    fn label_width(&self) -> usize {
        self.cells
            .iter()
            .flatten()
            .map(|&off| self.label(off).len())
            .max()
            .unwrap_or(1)
    }

    fn window_note(&self) -> Option<String> {
        let (rows, cols) = (&self.rows, &self.cols);
        (!rows.whole() || !cols.whole()).then(|| {
            let tiles = if self.tiles && rows.start % rows.step == 0 && cols.start % cols.step == 0
            {
                ": one cell per tile, its first element"
            } else {
                ""
            };
            format!(
                "showing {}, {}{tiles} (choose with --rows, --cols, --window and --zoom)",
                rows.shown_text("rows"),
                cols.shown_text("columns")
            )
        })
    }
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
    let (mut rows, mut cols, layout) = if node.children.len() >= 2 {
        let (rows, cols) = (
            Axis::new(m, &node.children[..1]),
            Axis::new(m, &node.children[1..]),
        );
        let cols_name = if node.children.len() == 2 {
            format!("{name}_1")
        } else {
            format!("{name}_1..{name}_{}", node.children.len() - 1)
        };
        let layout = format!(
            "rows: {}, columns: {}",
            rows.label(&format!("{name}_0")),
            cols.label(&cols_name)
        );
        (rows, cols, layout)
    } else {
        let cols = Axis::new(m, &[t.node]);
        let layout = format!("one row of {}", cols.label(name));
        (Axis::new(m, &[]), cols, layout)
    };
    let (row_step, col_step) = match window.zoom {
        Zoom::Every(n) => (n, n),
        Zoom::Tiles => {
            let tile = |a: &Axis| a.groups.first().copied().unwrap_or(1);
            if rows.groups.is_empty() && cols.groups.is_empty() {
                return Err(Failure::input(format!(
                    "in --zoom tiles: {name} has no tiles (its rows and its columns are each one dimension); sample it with --zoom N instead"
                ))
                .into());
            }
            (tile(&rows), tile(&cols))
        }
    };
    let default = if svg.is_some() {
        SVG_WINDOW
    } else {
        TERM_WINDOW
    };
    let (shown_rows, shown_cols) = window.shown.unwrap_or((default, default));
    rows.choose(window.rows, row_step, shown_rows, ("--rows", "rows", name))?;
    cols.choose(
        window.cols,
        col_step,
        shown_cols,
        ("--cols", "columns", name),
    )?;
    let mut prog = Program::new(&f.expr);
    let cells = rows
        .shown()
        .map(|r| {
            cols.shown()
                .map(|c| prog.eval(&[r * cols.size + c]))
                .collect()
        })
        .collect();
    let def = &m.types()[t.ty];
    let class = match &def.class {
        parray_layout::TypeClass::Data {
            mem: Some(mem),
            elem,
            soa,
        } => format!("{mem} {}{elem}", if *soa { "soa " } else { "" }),
        parray_layout::TypeClass::Data {
            mem: None, elem, ..
        } => format!("{elem} view"),
        parray_layout::TypeClass::Thread(k) => format!("{} thread array", k.keyword()),
    };
    let parts = def.distribution.as_ref().map(Parts::of);
    let layout = match &def.distribution {
        None => layout,
        Some(d) => {
            let (holder, what) = match d.holders {
                Holders::Threads => (format!("threads of {}'s block", d.over), "thread:register"),
                Holders::Ranks => (format!("ranks of {}", d.over), "rank:offset"),
            };
            format!(
                "{layout}; distributed over the {} {holder}, {} elements each: a cell is {what}",
                d.ranks, d.part
            )
        }
    };
    let grid = Grid {
        title: format!("{name} ({class}): size {size}, extent {}", m.extent(t.node)),
        layout,
        extent: m.extent(t.node),
        rows,
        cols,
        tiles: window.zoom == Zoom::Tiles,
        cells,
        parts,
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

/// The line between columns in the terminal: `│` between groups, `║` between coarser ones.
fn column_line(level: usize) -> Option<char> {
    match level {
        0 => None,
        1 => Some('│'),
        _ => Some('║'),
    }
}

/// Where a rule between row groups (`─`, `═` between coarser ones) crosses a column line.
fn crossing(row_level: usize, col_level: usize) -> char {
    match (row_level > 1, col_level > 1) {
        (false, false) => '┼',
        (false, true) => '╫',
        (true, false) => '╪',
        (true, true) => '╬',
    }
}

fn terminal_text(g: &Grid, colored: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}; {}", g.title, g.layout);
    if let Some(note) = g.window_note() {
        let _ = writeln!(s, "{note}");
    }
    let last = |a: &Axis| a.index(a.count.saturating_sub(1));
    let w = g.label_width().max(last(&g.cols).to_string().len());
    let rw = last(&g.rows).to_string().len();
    let col_lines: Vec<usize> = (0..g.cols.count).map(|k| g.cols.separator(k)).collect();
    let trim = |s: &mut String| {
        let trimmed = s.trim_end_matches(' ').len();
        s.truncate(trimmed);
    };
    // Column numbers.
    let _ = write!(s, "{:rw$} ", "");
    for (c, &line) in g.cols.shown().zip(&col_lines) {
        if column_line(line).is_some() {
            s.push(' ');
        }
        let _ = write!(s, " {c:>w$} ");
    }
    trim(&mut s);
    s.push('\n');
    for (k, (r, row)) in g.rows.shown().zip(&g.cells).enumerate() {
        let rule = g.rows.separator(k as u64);
        if rule > 0 {
            let h = if rule > 1 { '═' } else { '─' };
            s.push_str(&" ".repeat(rw + 1));
            for &line in &col_lines {
                if line > 0 {
                    s.push(crossing(rule, line));
                }
                s.extend(std::iter::repeat_n(h, w + 2));
            }
            s.push('\n');
        }
        let _ = write!(s, "{r:>rw$} ");
        for (&off, &line) in row.iter().zip(&col_lines) {
            if let Some(ch) = column_line(line) {
                if colored {
                    s.push_str("\x1b[0m");
                }
                s.push(ch);
            }
            let text = g.label(off);
            if colored {
                let bg = ansi256(hsl_to_rgb(g.hue(off), 0.8, 0.62));
                let _ = write!(s, "\x1b[48;5;{bg}m\x1b[38;5;16m {text:>w$} ");
            } else {
                let _ = write!(s, " {text:>w$} ");
            }
        }
        if colored {
            s.push_str("\x1b[0m");
        } else {
            // No trailing blanks in the plain view.
            trim(&mut s);
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
    let last = |a: &Axis| a.index(a.count.saturating_sub(1));
    let digits = g.label_width().max(last(&g.cols).to_string().len()).max(2) as u64;
    let (cw, ch) = (digits * 7 + 12, 20u64);
    let label_w = last(&g.rows).to_string().len() as u64 * 7 + 16;
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
    for (k, c) in g.cols.shown().enumerate() {
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle" fill="gray">{c}</text>"#,
            left + k as u64 * cw + cw / 2,
            top - 6,
        );
    }
    for (k, (lr, row)) in g.rows.shown().zip(&g.cells).enumerate() {
        let y = top + k as u64 * ch;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end" fill="gray">{lr}</text>"#,
            left - 4,
            y + ch / 2 + 4,
        );
        for (c, (lc, &off)) in g.cols.shown().zip(row).enumerate() {
            let x = left + c as u64 * cw;
            let text = g.label(off);
            let tip = if g.parts.is_some() {
                format!("{off}, {text}")
            } else {
                text.clone()
            };
            let _ = writeln!(
                s,
                r#"<rect x="{x}" y="{y}" width="{cw}" height="{ch}" fill="hsl({:.0}, 80%, 70%)" stroke="white"><title>[{lr}][{lc}] = {tip}</title></rect><text x="{}" y="{}" text-anchor="middle">{text}</text>"#,
                g.hue(off),
                x + cw / 2,
                y + ch / 2 + 4
            );
        }
    }
    // The groups' boundaries, thicker between coarser groups.
    let (right, bottom) = (
        left + cw * g.shown_cols() as u64,
        top + ch * g.shown_rows() as u64,
    );
    for k in 1..g.cols.count {
        let level = g.cols.separator(k);
        if level > 0 {
            let x = left + k * cw;
            let _ = writeln!(
                s,
                r##"<line x1="{x}" y1="{top}" x2="{x}" y2="{bottom}" stroke="#222" stroke-width="{}"/>"##,
                level + 1
            );
        }
    }
    for k in 1..g.rows.count {
        let level = g.rows.separator(k);
        if level > 0 {
            let y = top + k * ch;
            let _ = writeln!(
                s,
                r##"<line x1="{left}" y1="{y}" x2="{right}" y2="{y}" stroke="#222" stroke-width="{}"/>"##,
                level + 1
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
