//! Random *valid* Parray programs and index expressions, for property tests.
//!
//! Use from a test file with `mod gen;`. Everything is a deterministic function of a
//! stream of random numbers ([`Choices`]) in which 0 is always the simplest choice (a
//! natural type, a leaf, size 1, a literal, the first name...), so when proptest shrinks
//! the stream towards zeros and towards shorter, a failing case shrinks towards a small
//! program. The strategies:
//!
//! - [`program`]: a [`GenProgram`]: constants, then 1 to 6 types; the first is natural,
//!   later ones natural or artificial over earlier ones (`#R`, `n#R`, `S#R` with S nested
//!   and possibly over a prefix of R, references to sub-dimensions `A_1_0`), names with
//!   underscores and names that shadow a path (`T0_1` declared after `T0`: the longest
//!   declared prefix wins). Every type and every structure has at most
//!   [`MAX_ELEMS`] elements, so exhaustive checks are cheap.
//! - [`case`]: a [`Case`]: a program, an index expression valid for it (flat, nested,
//!   constants and variables mixed) and several assignments of in-range variable values.
//!
//! Sizes are learnt from the reference interpreter [`Interp`] while generating.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use parray_layout::interp::{DimId, Interp};
use parray_layout::parse_program;
use proptest::prelude::*;

/// The largest number of elements of a generated type or structure.
pub const MAX_ELEMS: u64 = 4096;

/// A stream of random choices; reads past its end give 0 (the simplest choice).
#[derive(Debug, Clone)]
pub struct Choices {
    data: Vec<u32>,
    pos: usize,
}

impl Choices {
    pub fn new(data: Vec<u32>) -> Self {
        Choices { data, pos: 0 }
    }

    /// A number in `[0, n)` (`n >= 1`).
    pub fn below(&mut self, n: u64) -> u64 {
        let mut v = self.data.get(self.pos).copied().unwrap_or(0) as u64;
        self.pos += 1;
        if n > 1 << 32 {
            v = v << 32 | self.data.get(self.pos).copied().unwrap_or(0) as u64;
            self.pos += 1;
        }
        v % n.max(1)
    }

    /// True with probability about `percent`%; false on 0.
    pub fn flag(&mut self, percent: u64) -> bool {
        self.below(100) >= 100 - percent
    }

    /// One of the items (the first on 0).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// The raw stream: the strategy every generator here is built on.
pub fn choices() -> impl Strategy<Value = Vec<u32>> {
    proptest::collection::vec(any::<u32>(), 0..600)
}

/// A generated program: its source text and what was declared.
#[derive(Clone)]
pub struct GenProgram {
    pub source: String,
    /// Constants in declaration order, with their values.
    pub consts: Vec<(String, u64)>,
    /// Declared type names in order, and whether each is natural.
    pub types: Vec<(String, bool)>,
}

impl fmt::Debug for GenProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\n{}", self.source)
    }
}

impl GenProgram {
    pub fn ast(&self) -> parray_layout::ast::Program {
        parse_program(&self.source)
            .unwrap_or_else(|e| panic!("generated program does not parse: {e}\n{}", self.source))
    }

    pub fn interp(&self) -> Interp {
        Interp::new(&self.ast(), &[]).unwrap_or_else(|e| {
            panic!(
                "generated program rejected by the interpreter: {e}\n{}",
                self.source
            )
        })
    }

    pub fn module(&self) -> parray_layout::Module {
        parray_layout::Module::build(&self.ast(), &[]).unwrap_or_else(|e| {
            panic!(
                "generated program rejected by the compiler: {e}\n{}",
                self.source
            )
        })
    }

    /// A program from its text (which must parse): its constants' values are not computed.
    pub fn from_source(source: &str) -> GenProgram {
        use parray_layout::ast::{Group, GroupBody, Item};
        fn has_ref(g: &Group) -> bool {
            match &g.body {
                GroupBody::Size(_) => false,
                GroupBody::Compound(inner) => inner.iter().any(has_ref),
                GroupBody::Ref { .. } => true,
            }
        }
        let ast = parse_program(source).unwrap_or_else(|e| panic!("{e}\n{source}"));
        let mut consts = Vec::new();
        let mut types = Vec::new();
        for item in &ast.items {
            match item {
                Item::Const(k) => consts.push((k.name.name.clone(), 0)),
                Item::Type(t) => types.push((t.name.name.clone(), !t.dims.iter().any(has_ref))),
                Item::Record(_) => {}
            }
        }
        GenProgram {
            source: source.to_string(),
            consts,
            types,
        }
    }

    /// Whether the type that `path` starts from is natural (by the longest declared prefix).
    pub fn is_natural_path(&self, path: &str) -> bool {
        let (_, natural) = self
            .types
            .iter()
            .filter(|(t, _)| {
                path == t || (path.starts_with(t.as_str()) && path[t.len()..].starts_with('_'))
            })
            .max_by_key(|(t, _)| t.len())
            .expect("a declared type");
        *natural
    }
}

/// Random valid programs.
pub fn program() -> impl Strategy<Value = GenProgram> {
    choices().prop_map(|v| gen_program(&mut Choices::new(v)))
}

/// A generated index expression and the largest value each of its variables may take
/// (the smallest size among the dimensions it indexes, minus one).
#[derive(Clone)]
pub struct GenIndex {
    pub text: String,
    pub bounds: BTreeMap<String, u64>,
}

impl fmt::Debug for GenIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} with bounds {:?}", self.text, self.bounds)
    }
}

/// A program, an index expression on one of its dimensions, and in-range variable values.
#[derive(Clone, Debug)]
pub struct Case {
    pub program: GenProgram,
    pub index: GenIndex,
    /// Several assignments of the variables (the first all zeros, the second all maxima).
    pub values: Vec<HashMap<String, u64>>,
}

/// Random programs with a random index expression and variable values.
pub fn case() -> impl Strategy<Value = Case> {
    choices().prop_map(|v| {
        let mut c = Choices::new(v);
        let program = gen_program(&mut c);
        let interp = program.interp();
        let target = gen_target(&mut c, &program, &interp);
        let index = gen_index(&mut c, &interp, &target);
        let values = gen_values(&mut c, &index.bounds, 6);
        Case {
            program,
            index,
            values,
        }
    })
}

/// A dimension to index: mostly a declared type (the artificial ones more often, the
/// later ones more often), else any sub-dimension path.
pub fn gen_target(c: &mut Choices, program: &GenProgram, interp: &Interp) -> String {
    let artificial: Vec<&String> = program
        .types
        .iter()
        .filter(|(_, n)| !n)
        .map(|(t, _)| t)
        .collect();
    match c.below(5) {
        0 | 1 => c.pick(&interp.paths()).clone(),
        2 => c.pick(&program.types).0.clone(),
        _ if !artificial.is_empty() => {
            // The last one half of the time.
            if c.flag(50) {
                artificial[artificial.len() - 1].clone()
            } else {
                (*c.pick(&artificial)).clone()
            }
        }
        _ => program.types.last().expect("a type").0.clone(),
    }
}

/// `n` assignments of the variables within `bounds`: all zeros, all maxima, then random.
pub fn gen_values(
    c: &mut Choices,
    bounds: &BTreeMap<String, u64>,
    n: usize,
) -> Vec<HashMap<String, u64>> {
    let mut out = vec![
        bounds.keys().map(|k| (k.clone(), 0)).collect(),
        bounds.iter().map(|(k, v)| (k.clone(), *v)).collect(),
    ];
    for _ in 2..n {
        out.push(
            bounds
                .iter()
                .map(|(k, max)| {
                    let v = match c.below(4) {
                        0 => c.below(max + 1),
                        1 => *max,
                        _ => c.below(max + 1),
                    };
                    (k.clone(), v)
                })
                .collect(),
        );
    }
    out
}

const VARS: &[&str] = &["i", "j", "k", "tid_0", "x_1"];

/// A random index expression on the dimension `path` (one flat or nested component, or
/// one component per sub-dimension), its variables drawn from a small pool.
pub fn gen_index(c: &mut Choices, interp: &Interp, path: &str) -> GenIndex {
    let d = interp.lookup(path).expect("a dimension");
    let mut bounds = BTreeMap::new();
    let mut text = path.to_string();
    // One component per sub-dimension needs two or more of them: `T[x]` with a single
    // component always indexes T itself (rule 8).
    if interp.children(d).len() >= 2 && c.flag(60) {
        for &kid in interp.children(d) {
            text += &gen_component(c, interp, kid, 0, &mut bounds);
        }
    } else {
        text += &gen_component(c, interp, d, 0, &mut bounds);
    }
    GenIndex { text, bounds }
}

/// A constant-only index expression on `path` (every component a constant).
pub fn gen_const_index(c: &mut Choices, interp: &Interp, path: &str) -> String {
    let d = interp.lookup(path).expect("a dimension");
    fn comp(c: &mut Choices, interp: &Interp, d: DimId, depth: u32) -> String {
        let kids = interp.children(d);
        if !kids.is_empty() && depth < 8 && c.flag(50) {
            let inner: String = kids
                .iter()
                .map(|k| comp(c, interp, *k, depth + 1))
                .collect();
            format!("[{inner}]")
        } else {
            format!("[{}]", c.below(interp.dim_size(d)))
        }
    }
    format!("{path}{}", comp(c, interp, d, 0))
}

/// An index expression on `path` of random shape, constants only, each at most a little
/// above the size of the dimension it is aimed at: often invalid (wrong number of
/// components, out of range), for checking that the compiler refuses what the rules refuse.
pub fn gen_any_index(c: &mut Choices, interp: &Interp, path: &str) -> String {
    fn comp(c: &mut Choices, interp: &Interp, d: Option<DimId>, depth: u32) -> String {
        let kids: &[DimId] = d.map_or(&[], |d| interp.children(d));
        if depth < 6 && c.flag(45) {
            // Usually as many components as sub-dimensions, sometimes one more or fewer.
            let n = match c.below(6) {
                0 => 1 + c.below(3) as usize,
                1 => kids.len() + 1,
                _ => kids.len().max(1),
            };
            let inner: String = (0..n)
                .map(|k| comp(c, interp, kids.get(k).copied(), depth + 1))
                .collect();
            format!("[{inner}]")
        } else {
            let size = d.map_or(3, |d| interp.dim_size(d));
            let v = if c.flag(10) {
                size.saturating_add(c.below(2))
            } else {
                c.below(size)
            };
            format!("[{v}]")
        }
    }
    let d = interp.lookup(path).expect("a dimension");
    let kids = interp.children(d);
    if kids.len() >= 2 && c.flag(50) {
        let n = if c.flag(15) {
            kids.len() + 1
        } else {
            kids.len()
        };
        let all: String = (0..n)
            .map(|k| comp(c, interp, kids.get(k).copied(), 1))
            .collect();
        format!("{path}{all}")
    } else {
        format!("{path}{}", comp(c, interp, Some(d), 0))
    }
}

fn gen_component(
    c: &mut Choices,
    interp: &Interp,
    d: DimId,
    depth: u32,
    bounds: &mut BTreeMap<String, u64>,
) -> String {
    let kids = interp.children(d);
    let size = interp.dim_size(d);
    if !kids.is_empty() && depth < 8 && c.flag(50) {
        let inner: String = kids
            .iter()
            .map(|k| gen_component(c, interp, *k, depth + 1, bounds))
            .collect();
        // Now and then a redundant one-component nesting `[[x]]`.
        return if c.flag(5) {
            format!("[{inner}]").replacen('[', "[[", 1) + "]"
        } else {
            format!("[{inner}]")
        };
    }
    if c.flag(60) {
        let v = *c.pick(VARS);
        let b = bounds.entry(v.to_string()).or_insert(u64::MAX);
        *b = (*b).min(size - 1);
        format!("[{v}]")
    } else {
        format!("[{}]", c.below(size))
    }
}

const CONST_NAMES: &[&str] = &["K", "N", "M_2"];
const PREFIXES: &[&str] = &[
    "float ",
    "dmem float ",
    "pinned int ",
    "smem double ",
    "float2 ",
    "#parray",
];

/// The generator proper: a program as a function of the choices (small sizes).
pub fn gen_program(c: &mut Choices) -> GenProgram {
    gen_program_sized(c, false)
}

/// Random valid programs with huge sizes (up to 2^64 - 1 elements per type: leaves such
/// as `[4294967296]`), for overflow hunting; too large to enumerate.
pub fn big_program() -> impl Strategy<Value = GenProgram> {
    choices().prop_map(|v| gen_program_sized(&mut Choices::new(v), true))
}

/// [`gen_program`], with huge sizes when `big`.
pub fn gen_program_sized(c: &mut Choices, big: bool) -> GenProgram {
    let mut source = String::new();
    let mut consts: Vec<(String, u64)> = Vec::new();
    for k in 0..c.below(4) as usize {
        let name = CONST_NAMES[k];
        let (text, value) = if k > 0 && c.flag(50) {
            let (pn, pv) = consts[c.below(k as u64) as usize].clone();
            match c.below(3) {
                0 => (format!("{pn} * 2"), pv * 2),
                1 => (format!("{pn} + 1"), pv + 1),
                _ => (format!("({pn} + {pv}) / 2"), pv),
            }
        } else {
            let v = 1 + c.below(4);
            (v.to_string(), v)
        };
        source += &format!("const {name} = {text}\n");
        consts.push((name.to_string(), value));
    }
    let mut types: Vec<(String, bool)> = Vec::new();
    let ntypes = 1 + c.below(6);
    for t in 0..ntypes {
        let interp = GenProgram {
            source: source.clone(),
            consts: consts.clone(),
            types: types.clone(),
        }
        .interp();
        let natural = t == 0 || !c.flag(70);
        let mut budget = if big { u64::MAX } else { MAX_ELEMS };
        let ngroups = 1 + c.below(if natural { 4 } else { 3 });
        let mut dims = String::new();
        for _ in 0..ngroups {
            dims += &if natural {
                natural_group(c, 1, &mut budget, &consts)
            } else {
                artificial_group(c, 1, &mut budget, &consts, &interp)
            };
        }
        let name = type_name(c, t, &types, &consts);
        let prefix = *c.pick(PREFIXES);
        let decl = if prefix == "#parray" {
            format!("#parray {{dmem float {dims}}} {name}\n")
        } else {
            format!("{prefix}{dims} {name}\n")
        };
        source += &decl;
        types.push((name, natural));
    }
    GenProgram {
        source,
        consts,
        types,
    }
}

fn type_name(
    c: &mut Choices,
    t: u64,
    types: &[(String, bool)],
    consts: &[(String, u64)],
) -> String {
    let taken = |n: &str| types.iter().any(|(m, _)| m == n) || consts.iter().any(|(m, _)| m == n);
    let name = match c.below(5) {
        0 | 1 => format!("T{t}"),
        2 => format!("my_T{t}"),
        // Shadow a path of an earlier type: the longest declared prefix wins.
        3 if !types.is_empty() => {
            let (base, _) = c.pick(types);
            format!("{base}_{}", c.below(3))
        }
        4 if !types.is_empty() => {
            let (base, _) = c.pick(types);
            format!("{base}_x{t}")
        }
        _ => format!("T{t}"),
    };
    if taken(&name) {
        format!("T{t}")
    } else {
        name
    }
}

/// A size expression of value `s`, now and then through the constants.
fn size_text(c: &mut Choices, s: u64, consts: &[(String, u64)]) -> String {
    if s > 1 << 32 {
        return s.to_string();
    }
    if consts.is_empty() || !c.flag(40) {
        return if c.flag(10) {
            format!("{}/2", s * 2)
        } else {
            s.to_string()
        };
    }
    let (k, v) = c.pick(consts).clone();
    match c.below(5) {
        0 if v == s => k,
        1 if s.is_multiple_of(v) => format!("{k}*{}", s / v),
        2 if s > v => format!("{k} + {}", s - v),
        2 if s < v => format!("({k} - {})", v - s),
        3 if 2 * s >= v => format!("({k} + {}) / 2", 2 * s - v),
        4 => format!("{s}*{k}/{k}"),
        _ => s.to_string(),
    }
}

fn natural_group(
    c: &mut Choices,
    depth: u32,
    budget: &mut u64,
    consts: &[(String, u64)],
) -> String {
    if depth < 4 && c.flag(35) {
        let n = 1 + c.below(3);
        let inner: String = (0..n)
            .map(|_| natural_group(c, depth + 1, budget, consts))
            .collect();
        return format!("[{inner}]");
    }
    const BIG: &[u64] = &[7, 256, 65536, 1 << 20, (1 << 32) - 1, 1 << 32, 1 << 40];
    let s = if *budget > MAX_ELEMS && c.flag(40) {
        let s = *c.pick(BIG);
        if s <= *budget {
            s
        } else {
            1 + c.below(*budget)
        }
    } else {
        1 + c.below((*budget).clamp(1, 6))
    };
    *budget /= s;
    format!("[{}]", size_text(c, s, consts))
}

fn artificial_group(
    c: &mut Choices,
    depth: u32,
    budget: &mut u64,
    consts: &[(String, u64)],
    interp: &Interp,
) -> String {
    if depth < 3 && c.flag(25) {
        let n = 1 + c.below(3);
        let inner: String = (0..n)
            .map(|_| artificial_group(c, depth + 1, budget, consts, interp))
            .collect();
        return format!("[{inner}]");
    }
    // The target: any dimension of an earlier type, the later types more often.
    let paths = interp.paths();
    let recent: Vec<&String> = {
        let last = interp.type_names().last().cloned().expect("a type");
        paths.iter().filter(|p| p.starts_with(&last)).collect()
    };
    let target = if c.flag(40) {
        (*c.pick(&recent)).clone()
    } else {
        c.pick(&paths).clone()
    };
    let rsize = interp.size(&target).expect("a dimension");
    let room = rsize.min(*budget).max(1);
    let group = match c.below(3) {
        0 if rsize <= *budget => {
            *budget /= rsize;
            format!("[#{target}]")
        }
        2 => {
            // S#R: all of R when it fits, else a prefix.
            let total = if rsize <= *budget && c.flag(50) {
                rsize
            } else {
                1 + c.below(room)
            };
            *budget /= total;
            format!("[{}#{target}]", structure(c, total, 0, consts))
        }
        _ => {
            let n = 1 + c.below(room);
            *budget /= n;
            format!("[{}#{target}]", size_text(c, n, consts))
        }
    };
    group
}

/// The groups of a structure whose sizes multiply to `total`.
fn structure(c: &mut Choices, total: u64, depth: u32, consts: &[(String, u64)]) -> String {
    let k = 1 + c.below(3);
    let mut rest = total;
    let mut out = String::new();
    for g in 0..k {
        let f = if g + 1 == k {
            rest
        } else {
            let divisors: Vec<u64> = if rest <= MAX_ELEMS {
                (1..=rest).filter(|d| rest.is_multiple_of(*d)).collect()
            } else {
                let mut d: Vec<u64> = [2, 3, 4, 5, 6, 7, 8, 16, 256, 65536, 1 << 20, 1 << 32]
                    .into_iter()
                    .filter(|d| rest.is_multiple_of(*d))
                    .collect();
                d.extend([1, rest]);
                d
            };
            *c.pick(&divisors)
        };
        rest /= f;
        if depth < 2 && f > 1 && c.flag(30) {
            out += &format!("[{}]", structure(c, f, depth + 1, consts));
        } else {
            out += &format!("[{}]", size_text(c, f, consts));
        }
    }
    out
}

/// A small random edit of a valid program, which may make it invalid: a number changed
/// (sizes, `n` of `n#R`, structure sizes, constants), a reference retargeted to another
/// path or to a name that does not exist, or a natural leaf put into a type.
pub fn mutate(c: &mut Choices, program: &GenProgram) -> String {
    let src = &program.source;
    let bytes = src.as_bytes();
    // Spans of the numbers that are not part of a name.
    let mut numbers = Vec::new();
    let mut k = 0;
    while k < bytes.len() {
        if bytes[k].is_ascii_digit()
            && (k == 0 || !(bytes[k - 1].is_ascii_alphanumeric() || bytes[k - 1] == b'_'))
        {
            let start = k;
            while k < bytes.len() && bytes[k].is_ascii_digit() {
                k += 1;
            }
            numbers.push((start, k));
        } else {
            k += 1;
        }
    }
    let refs: Vec<usize> = src
        .match_indices('#')
        .filter(|(i, _)| !src[*i..].starts_with("#parray"))
        .map(|(i, _)| i)
        .collect();
    match c.below(3) {
        0 if !numbers.is_empty() => {
            let (a, b) = *c.pick(&numbers);
            format!("{}{}{}", &src[..a], c.below(9), &src[b..])
        }
        1 if !refs.is_empty() => {
            let at = *c.pick(&refs) + 1;
            let end = at
                + src[at..]
                    .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                    .unwrap_or(src.len() - at);
            let interp = program.interp();
            let mut names = interp.paths();
            names.push("Nope".to_string());
            names.push(format!("{}_9", &src[at..end]));
            names.push("K".to_string());
            let to = c.pick(&names).clone();
            format!("{}{}{}", &src[..at], to, &src[end..])
        }
        _ => {
            // A natural leaf before some group.
            let opens: Vec<usize> = src.match_indices('[').map(|(i, _)| i).collect();
            let at = *c.pick(&opens);
            format!("{}[2]{}", &src[..at], &src[at..])
        }
    }
}
