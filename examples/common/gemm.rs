//! What the SGEMM examples (`fig21_sgemm`, `sgemm`, `bench`) share: inputs and the
//! reference product (cuBLAS on a GPU, f64 on the CPU under the emulation), running one
//! subprogram instance on a layout, and the report table.

use parray::{Array, DataType, ViewOf};

use parray::gpu::Timing;

use super::{cell, median_time, random_values};

/// The layouts of a square N x N matrix of `elem` the GEMMs run on, as `parray!`
/// declarations: row-major (Fig 13), two halves (Fig 17), four strips (Fig 18a), 2x2 blocks
/// (Fig 18b), and the host matrix `H` the inputs go through.
#[allow(unused_macros)] // every example has `common`; the GEMM ones use this
macro_rules! square_layouts {
    ($elem:ident, $n:literal) => {
        parray::parray! {
            const N = $n;
            pub paged $elem [N][N] H;
            pub dmem $elem [N][N] ROWS;
            pub dmem $elem [2][N][N/2] HALVES_STORE;
            pub $elem [#HALVES_STORE_1][[#HALVES_STORE_0][#HALVES_STORE_2]] HALVES;
            pub dmem $elem [4][N][N/4] STRIPS_STORE;
            pub $elem [#STRIPS_STORE_1][[#STRIPS_STORE_0][#STRIPS_STORE_2]] STRIPS;
            pub dmem $elem [2][2][N/2][N/2] BLOCKS_STORE;
            pub $elem [[#BLOCKS_STORE_0][#BLOCKS_STORE_2]][[#BLOCKS_STORE_1][#BLOCKS_STORE_3]] BLOCKS;
        }
    };
}
#[allow(unused_imports)]
pub(crate) use square_layouts;

/// One measured product.
pub struct Row {
    pub kernel: &'static str,
    /// M x N x K.
    pub shape: (usize, usize, usize),
    pub layout: &'static str,
    pub time: Timing,
    /// Relative Frobenius error against the reference (`None` for the reference itself).
    pub error: Option<f64>,
    pub reference: &'static str,
}

impl Row {
    pub fn tflops(&self) -> f64 {
        let (m, n, k) = self.shape;
        2.0 * m as f64 * n as f64 * k as f64 / self.time.seconds() / 1e12
    }

    pub fn ok(&self) -> bool {
        self.error.is_none_or(|e| e <= 1e-5)
    }

    /// The row in the main example's table, for a square product on `threads` threads
    /// (none for cuBLAS).
    pub fn to_run(&self, variant: &'static str, threads: usize) -> parray::Result<super::Run> {
        Ok(super::Run {
            variant,
            threads,
            layout: self.layout,
            backend: super::backend(true)?.0,
            time: self.time,
            n: self.shape.0,
            ok: self.ok(),
        })
    }
}

/// An SGEMM example's `main`: with `--source` (`--source hip`) the kernel `source` gives,
/// otherwise the table of `rows` and its check line, exiting with 1 when a check fails.
pub fn example_main(
    source: impl FnOnce(bool) -> parray::Result<&'static str>,
    rows: impl FnOnce() -> parray::Result<Vec<Row>>,
) -> parray::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--source") {
        print!("{}", source(args.iter().any(|a| a == "hip"))?);
        return Ok(());
    }
    println!("backend: {:?}", parray::gpu::backend()?);
    let ok = report(&rows()?);
    println!("check: {}", if ok { "ok" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}

/// Print the rows, each beside the cuBLAS row of its shape; true when every check passed.
pub fn report(rows: &[Row]) -> bool {
    println!(
        "{:<8} {:>16}  {:<20} {:>21} {:>20} {:>10}  check (relative error)",
        "kernel", "M x N x K", "layout", "time (ms)", "TFLOP/s", "of cuBLAS"
    );
    for row in rows {
        let cublas = rows
            .iter()
            .find(|r| r.error.is_none() && r.shape == row.shape)
            .map(|r| r.tflops());
        let share = cublas.map_or("-".to_string(), |c| {
            format!("{:.1}%", 100.0 * row.tflops() / c)
        });
        let check = match row.error {
            None => "reference".to_string(),
            Some(e) => format!(
                "{} ({e:.1e} vs {})",
                if row.ok() { "ok" } else { "FAILED" },
                row.reference
            ),
        };
        let (m, n, k) = row.shape;
        println!(
            "{:<8} {:>16}  {:<20} {:>21} {:>20} {:>10}  {check}",
            row.kernel,
            format!("{m}x{n}x{k}"),
            row.layout,
            cell(row.time.ms, 3, row.time),
            cell(row.tflops(), 2, row.time),
            share
        );
    }
    rows.iter().all(Row::ok)
}

/// Fresh random inputs (row-major on the host) and their product.
pub struct Inputs {
    pub shape: (usize, usize, usize),
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    pub c: Vec<f64>,
    pub reference: &'static str,
}

impl Inputs {
    /// Random M x K and K x N matrices and their product: cuBLAS's on a GPU on the
    /// row-major arrays `A`, `B`, `C` (timed: its row goes into `rows`), an f64 CPU
    /// product under the emulation.
    pub fn new<A, B, C>(
        (m, n, k): (usize, usize, usize),
        repeats: usize,
        rows: &mut Vec<Row>,
    ) -> parray::Result<Inputs>
    where
        A: DataType<Elem = f32>,
        B: DataType<Elem = f32>,
        C: DataType<Elem = f32>,
    {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        let (a, b) = (random_values(m * k, seed), random_values(k * n, seed + 1));
        if parray::gpu::backend()? == parray::gpu::Backend::Emulate {
            let c = cpu_product((m, n, k), &a, &b);
            return Ok(Inputs {
                shape: (m, n, k),
                a,
                b,
                c,
                reference: "f64 CPU",
            });
        }
        let (mut da, mut db, mut dc) = (Array::<A>::new()?, Array::<B>::new()?, Array::<C>::new()?);
        da.copy_from_slice(&a)?;
        db.copy_from_slice(&b)?;
        let time = median_time(repeats, true, || {
            parray::gpu::cublas::sgemm(&da, &db, &mut dc)
        })?;
        let c = dc.to_vec()?.into_iter().map(f64::from).collect();
        rows.push(Row {
            kernel: "cuBLAS",
            shape: (m, n, k),
            layout: "row-major",
            time,
            error: None,
            reference: "-",
        });
        Ok(Inputs {
            shape: (m, n, k),
            a,
            b,
            c,
            reference: "cuBLAS",
        })
    }

    /// Store the inputs in the layouts `VA`, `VB` (views of the storages `SA`, `SB`; `H*`
    /// the row-major host types), run `multiply` (timed), read C back through `VC` and
    /// compare.
    #[allow(clippy::too_many_arguments)]
    pub fn run<HA, HB, HC, VA, SA, VB, SB, VC, SC>(
        &self,
        kernel: &'static str,
        layout: &'static str,
        repeats: usize,
        mut multiply: impl FnMut(&Array<SA>, &Array<SB>, &mut Array<SC>) -> parray::Result<()>,
    ) -> parray::Result<Row>
    where
        HA: DataType<Elem = f32>,
        HB: DataType<Elem = f32>,
        HC: DataType<Elem = f32>,
        VA: ViewOf<SA> + DataType<Elem = f32>,
        SA: DataType<Elem = f32>,
        VB: ViewOf<SB> + DataType<Elem = f32>,
        SB: DataType<Elem = f32>,
        VC: ViewOf<SC> + DataType<Elem = f32>,
        SC: DataType<Elem = f32>,
    {
        let (a, b, mut c) = store_operands::<f32, HA, HB, VA, SA, VB, SB, SC>(&self.a, &self.b)?;
        let time = median_time(repeats, true, || multiply(&a, &b, &mut c))?;
        let hc = read_product::<HC, VC, SC>(&c)?;
        Ok(Row {
            kernel,
            shape: self.shape,
            layout,
            time,
            error: Some(relative_error(hc.as_slice()?, &self.c)),
            reference: self.reference,
        })
    }
}

/// A product's operands: A and B, given row-major, stored in the layouts `VA` and `VB`
/// (views of the storages `SA` and `SB`) through the row-major host types `HA` and `HB`,
/// and C's storage `SC` filled with NaN (so that an element the product misses shows).
#[allow(clippy::type_complexity)]
pub fn store_operands<E, HA, HB, VA, SA, VB, SB, SC>(
    a: &[E],
    b: &[E],
) -> parray::Result<(Array<SA>, Array<SB>, Array<SC>)>
where
    E: parray::Element,
    HA: DataType<Elem = E>,
    HB: DataType<Elem = E>,
    VA: ViewOf<SA> + DataType<Elem = E>,
    SA: DataType<Elem = E>,
    VB: ViewOf<SB> + DataType<Elem = E>,
    SB: DataType<Elem = E>,
    SC: DataType<Elem = f32>,
{
    let (mut ha, mut hb) = (Array::<HA>::new()?, Array::<HB>::new()?);
    let (mut sa, mut sb, mut c) = (
        Array::<SA>::new()?,
        Array::<SB>::new()?,
        Array::<SC>::new()?,
    );
    ha.as_mut_slice()?.copy_from_slice(a);
    hb.as_mut_slice()?.copy_from_slice(b);
    parray::copy::copy(&ha, sa.view_mut::<VA>())?;
    parray::copy::copy(&hb, sb.view_mut::<VB>())?;
    c.fill(f32::NAN)?;
    Ok((sa, sb, c))
}

/// C, of the storage `SC`, read back row-major (the host type `HC`) through its layout's
/// view `VC`.
pub fn read_product<HC, VC, SC>(c: &Array<SC>) -> parray::Result<Array<HC>>
where
    HC: DataType<Elem = f32>,
    VC: ViewOf<SC> + DataType<Elem = f32>,
    SC: DataType<Elem = f32>,
{
    let mut hc = Array::<HC>::new()?;
    parray::copy::copy(c.view::<VC>(), &mut hc)?;
    Ok(hc)
}

/// Relative Frobenius error of `got` against `want` (infinite when `got` has a NaN).
pub fn relative_error(got: &[f32], want: &[f64]) -> f64 {
    if got.iter().any(|g| !g.is_finite()) {
        return f64::INFINITY;
    }
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (g, w) in got.iter().zip(want) {
        diff += (*g as f64 - w).powi(2);
        norm += w.powi(2);
    }
    (diff / norm.max(f64::MIN_POSITIVE)).sqrt()
}

/// The f64 product of row-major M x K and K x N matrices.
pub fn cpu_product((m, n, k): (usize, usize, usize), a: &[f32], b: &[f32]) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let aip = a[i * k + p] as f64;
            let row = &b[p * n..(p + 1) * n];
            for (cij, bpj) in c[i * n..(i + 1) * n].iter_mut().zip(row) {
                *cij += aip * *bpj as f64;
            }
        }
    }
    c
}

/// The sizes to run: `--n N` on the command line, else `gpu` or `emulated`.
pub fn sizes(gpu: &[usize], emulated: &[usize]) -> parray::Result<Vec<usize>> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(n) = args
        .iter()
        .position(|a| a == "--n")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
    {
        return Ok(vec![n]);
    }
    if parray::gpu::backend()? == parray::gpu::Backend::Cuda {
        return Ok(gpu.to_vec());
    }
    // Said, so that nobody waits for the GPU's sizes on the CPU.
    let list = |sizes: &[usize]| {
        sizes
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "sizes: N = {} under the emulation (a GPU runs N = {}; `--n N` chooses one)",
        list(emulated),
        list(gpu)
    );
    Ok(emulated.to_vec())
}

/// `--m M --n N --k K` from the command line, when `--m` or `--k` is given (a missing
/// size is the one before it: `--m 1000` alone is 1000 cubed); `None` otherwise.
#[allow(dead_code)] // the examples of one shape do not ask
pub fn shape() -> Option<(usize, usize, usize)> {
    let (m, n, k) = (value("--m"), value("--n"), value("--k"));
    if m.is_none() && k.is_none() {
        return None;
    }
    let m = m.or(n).or(k)?;
    let n = n.unwrap_or(m);
    Some((m, n, k.unwrap_or(n)))
}

/// The number after `flag` on the command line (`--split 4`), if the flag is there; a
/// flag without one ends the process with a usage line.
pub fn value(flag: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == flag)?;
    match args.get(at + 1).and_then(|v| v.parse().ok()) {
        Some(v) => Some(v),
        None => {
            eprintln!("{flag} takes a number: {flag} 1000");
            std::process::exit(2);
        }
    }
}

/// Timed repeats: 10 on a GPU, 1 under the emulation.
pub fn repeats() -> parray::Result<usize> {
    Ok(if parray::gpu::backend()? == parray::gpu::Backend::Cuda {
        10
    } else {
        1
    })
}
